import cluster from 'node:cluster';
import type { Worker } from 'node:cluster';
import type { AddressInfo } from 'node:net';
import { answerMetricsRequests } from './cluster-metrics';

/** A replacement that cannot start is tried again after this, doubling up to the most. */
const RESTART_DELAY_MS = { first: 1000, most: 30_000 };

/**
 * The primary process when API_PROCESSES > 1: it serves nothing itself. It starts the API
 * processes, which share its port through Node's cluster module (the primary accepts connections
 * and hands them round-robin), and is the one place signals arrive: SIGTERM or SIGINT drains
 * every process and exits when all have, with code 1 if any of them did not end cleanly.
 * - A process that dies before the instance first served everywhere is a start failure (a taken
 *   port, a bad setting): the whole service exits with an error rather than restart it forever.
 * - Later, a process that dies is replaced at once; a replacement that cannot start (Redis away
 *   for a moment) is tried again with a growing delay while the others serve.
 * - If the primary itself is killed, Node ends the API processes with it (their IPC channel closes).
 */
export function superviseApiProcesses(processes: number, host: string): void {
  const listening = new Map<number, Worker>();
  let announced = false;
  let stopping = false;
  let restartDelayMs = RESTART_DELAY_MS.first;
  let restartTimer: NodeJS.Timeout | undefined;

  const start = (): void => {
    const worker = cluster.fork();
    // IPC to a process that is going away fails; its exit is what matters, and is handled below.
    worker.on('error', (error) => console.error(`API process ${worker.process.pid}: ${error.message}`));
  };
  const allEnded = (): boolean => Object.values(cluster.workers ?? {}).every((worker) => !worker || worker.isDead());

  cluster.on('listening', (worker, address: AddressInfo) => {
    listening.set(worker.id, worker);
    restartDelayMs = RESTART_DELAY_MS.first;
    if (announced || listening.size < processes) return;
    announced = true;
    console.log(`API listening: ${baseUrl(host, address.port)} (${processes} processes)`);
  });

  cluster.on('exit', (worker, code, signal) => {
    const wasServing = listening.delete(worker.id);
    const how = signal ?? `exit code ${code}`;
    if (stopping) {
      // Nest ends a drained process by raising SIGTERM again; anything else went wrong.
      if (signal !== 'SIGTERM' && code !== 0) process.exitCode = 1;
      if (allEnded()) process.exit();
      return;
    }
    if (!announced) {
      console.error(`API process ${worker.process.pid} failed to start (${how}); stopping`);
      process.exitCode = 1;
      stopAll();
      return;
    }
    if (wasServing) {
      console.error(`API process ${worker.process.pid} ended (${how}); starting a replacement`);
      start();
      return;
    }
    console.error(`API process ${worker.process.pid} failed to start (${how}); trying again in ${restartDelayMs} ms`);
    restartTimer = setTimeout(start, restartDelayMs);
    restartDelayMs = Math.min(restartDelayMs * 2, RESTART_DELAY_MS.most);
  });

  const stopAll = (): void => {
    if (stopping) return;
    stopping = true;
    clearTimeout(restartTimer);
    if (allEnded()) process.exit();
    // Each drains its open completions as a single-process API does on SIGTERM.
    for (const worker of Object.values(cluster.workers ?? {})) if (worker && !worker.isDead()) worker.process.kill('SIGTERM');
  };
  process.on('SIGTERM', stopAll);
  process.on('SIGINT', stopAll);

  cluster.on(
    'message',
    answerMetricsRequests(() => [...listening.values()]),
  );
  for (let index = 0; index < processes; index++) start();
}

/** The base URL a client on this machine uses: a wildcard bind address is reached on 127.0.0.1. */
export const baseUrl = (host: string, port: number): string => `http://${host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host}:${port}/v1`;

/** An API process under the supervisor: only the supervisor's SIGTERM stops it (a terminal's Ctrl-C reaches the supervisor). */
export const isSupervisedApiProcess = (): boolean => cluster.isWorker;
