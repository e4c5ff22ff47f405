import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { delimiter, join, resolve } from 'node:path';
import { engineCpuList } from '../engine-cpus';

/**
 * The kernel kills the server when the worker dies, however it dies (SIGKILL after a shutdown
 * that ran out of time, an OOM kill, a crash): a server left behind would hold its port, its
 * CPUs and its memory (`setpriv --pdeathsig`, util-linux, where it is installed; a graceful stop
 * stops the server itself).
 */
const DIES_WITH_WORKER = onPath('setpriv') ? ['setpriv', '--pdeathsig', 'KILL', '--'] : [];

function onPath(name: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => dir !== '' && existsSync(join(dir, name)));
}

/** A running llama-server (a child of the worker, or one beside it): where it answers, and how it is stopped. */
export interface RunningServer {
  url: string;
  stop(): Promise<void>;
}

/** Where `npm run llama-server:build` leaves the binary, under the directory the worker runs in. */
export const BUILT_LLAMA_SERVER = '.llama-server/bin/llama-server';

export interface LlamaServerProcessOptions {
  /** LLAMA_SERVER_BIN; empty: the built one, else `llama-server` on the PATH. */
  binary: string;
  modelPath: string;
  /** Server slots (`--parallel`): one per sequence of the worker. */
  slots: number;
  /** Tokens of context per slot. */
  contextSize: number;
  threads: number;
  /** The worker's GPU setting; `'false'` keeps every layer on the CPU. */
  gpu: string;
  /** ENGINE_CPUS: the server's threads on these CPUs (taskset), none when empty. */
  cpus?: string;
  /**
   * An embedding model's server (`--embeddings`; an input is evaluated in one batch, so a batch
   * holds a slot's context): `pooled` as the model's file says, `per-token` (`--pooling none`), or
   * `ranks` for a reranker (`--reranking`).
   */
  embeddings?: 'pooled' | 'per-token' | 'ranks';
  log: (message: string) => void;
  /** The server ended while the worker still needed it. */
  onLost: (error: Error) => void;
}

/** Lines of the server's output kept to say why it ended. */
const KEPT_LINES = 20;
const READY_TIMEOUT_MS = 300_000;

/** The binary to start: the one named, else the one built here, else the PATH's. */
export function llamaServerBinary(named: string): string {
  if (named !== '') return named;
  const built = resolve(BUILT_LLAMA_SERVER);
  return existsSync(built) ? built : 'llama-server';
}

/**
 * llama.cpp's own server as a child of the worker, on a loopback port of its own: started with
 * one slot per sequence and the worker's context per slot (a unified KV cache of slots × context,
 * so a slot holds what it was given), asked for its health until it loads, stopped with the worker.
 * If it ends by itself the worker is told (`onLost`): a worker without its engine stops.
 */
export class LlamaServerProcess {
  private stopping = false;
  private readonly recent: string[] = [];

  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
  ) {}

  static async start(options: LlamaServerProcessOptions): Promise<LlamaServerProcess> {
    const port = await freeLoopbackPort();
    const binary = llamaServerBinary(options.binary);
    const args = [
      ['--model', options.modelPath],
      ['--host', '127.0.0.1'],
      ['--port', String(port)],
      ['--parallel', String(options.slots)],
      ['--ctx-size', String(options.contextSize * options.slots)],
      ['--threads', String(options.threads)],
      ['--threads-batch', String(options.threads)],
      ['--n-gpu-layers', options.gpu === 'false' ? '0' : '999'],
      ['--cont-batching'],
      ['--metrics'],
      ['--no-webui'],
      options.embeddings ? ['--embeddings', '--batch-size', String(options.contextSize), '--ubatch-size', String(options.contextSize)] : [],
      options.embeddings === 'per-token' ? ['--pooling', 'none'] : options.embeddings === 'ranks' ? ['--reranking'] : [],
    ].flat();
    options.log(
      `llama-server: starting ${binary} with ${options.slots} slots of ${options.contextSize} tokens on 127.0.0.1:${port}${options.cpus ? `, on CPUs ${options.cpus}` : ''}`,
    );
    const cpus = options.cpus ? engineCpuList(options.cpus, options.threads).join(',') : undefined;
    const [command, ...rest] = [...DIES_WITH_WORKER, ...(cpus ? ['taskset', '-c', cpus] : []), binary, ...args];
    const child = spawn(command, rest, { stdio: ['ignore', 'pipe', 'pipe'] });
    const server = new LlamaServerProcess(child, `http://127.0.0.1:${port}`);
    const keep = (chunk: Buffer): void => {
      for (const line of chunk.toString().split('\n')) if (line.trim() !== '') server.recent.push(line);
      server.recent.splice(0, Math.max(0, server.recent.length - KEPT_LINES));
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    const exited = new Promise<Error>((resolveExit) => {
      child.once('error', (error) =>
        resolveExit(new Error(`llama-server could not start (${binary}): ${error.message}; build it with npm run llama-server:build or set LLAMA_SERVER_BIN`)),
      );
      child.once('exit', (code, signal) =>
        resolveExit(new Error(`llama-server ended (${signal ?? `exit code ${String(code)}`}):\n${server.recent.join('\n')}`)),
      );
    });
    void exited.then((error) => {
      if (!server.stopping) options.onLost(error);
    });
    const ready = await Promise.race([waitForHealth(server.url, READY_TIMEOUT_MS), exited]);
    if (ready instanceof Error) {
      server.stopping = true;
      throw ready;
    }
    return server;
  }

  /** Stops the server: SIGTERM, then SIGKILL if it has not ended within 5 s. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const ended = new Promise<void>((resolveEnd) => this.child.once('exit', () => resolveEnd()));
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await ended;
    clearTimeout(timer);
  }
}

/** Waits until `GET /health` answers 200 (503 while the model loads). */
export async function waitForHealth(url: string, timeoutMs: number): Promise<true> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) });
      await response.body?.cancel();
      if (response.ok) return true;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`llama-server at ${url} was not healthy within ${timeoutMs / 1000} s`);
    await new Promise((wake) => setTimeout(wake, 100));
  }
}

function freeLoopbackPort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => (typeof address === 'object' && address ? resolvePort(address.port) : reject(new Error('no port'))));
    });
  });
}
