import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

export interface ManagedProcessOptions {
  name: string;
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  /** Output is appended here, for reading after a failure. */
  logFile?: string;
  /** Mirror output to this process's stdout/stderr. */
  echo?: boolean;
}

/** A child process whose output can be awaited line by line. */
export class ManagedProcess {
  readonly child: ChildProcess;
  private output = '';
  private readonly exited: Promise<number | null>;

  constructor(private readonly options: ManagedProcessOptions) {
    this.child = spawn(options.command, options.args, {
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const log = options.logFile ? openLog(options.logFile) : undefined;
    const collect = (chunk: Buffer, mirror: NodeJS.WriteStream): void => {
      const text = chunk.toString();
      this.output = (this.output + text).slice(-64 * 1024);
      log?.write(text);
      if (options.echo) mirror.write(text);
    };
    this.child.stdout?.on('data', (chunk: Buffer) => collect(chunk, process.stdout));
    this.child.stderr?.on('data', (chunk: Buffer) => collect(chunk, process.stderr));
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
    // 'close' comes after the last output: the log file's descriptor is released with the child.
    this.child.once('close', () => log?.end());
  }

  get name(): string {
    return this.options.name;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Resolves with the exit code when the process ends, however it ends. */
  get exit(): Promise<number | null> {
    return this.exited;
  }

  get recentOutput(): string {
    return this.output;
  }

  get isRunning(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Resolves with the first match of `pattern` in the output; fails if the process exits or time runs out. */
  async waitForOutput(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const match = this.output.match(pattern);
      if (match) return match;
      if (!this.isRunning) throw new Error(`${this.name} exited before printing ${pattern}:\n${this.output}`);
      if (Date.now() > deadline) throw new Error(`${this.name} did not print ${pattern} within ${timeoutMs} ms:\n${this.output}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  /** Sends `signal` and waits for the exit; SIGKILL if it has not exited after `graceMs`. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', graceMs = 10_000): Promise<number | null> {
    if (!this.isRunning) return this.child.exitCode;
    this.child.kill(signal);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}

function openLog(path: string): NodeJS.WritableStream {
  mkdirSync(dirname(path), { recursive: true });
  return createWriteStream(path, { flags: 'a' });
}
