import cluster from 'node:cluster';
import type { Worker } from 'node:cluster';
import type { AddressInfo } from 'node:net';
import { answerMetricsRequests } from './cluster-metrics';

/**
 * The primary process when API_PROCESSES > 1: it serves nothing itself. It starts the API
 * processes, which share its port through Node's cluster module (the primary accepts connections
 * and hands them round-robin), replaces one that dies after it was serving, and is the one place
 * signals arrive: SIGTERM or SIGINT drains every process and exits when all have. A process that
 * dies before it ever listened is a start failure (Redis unreachable, a bad setting): the whole
 * service exits with an error rather than restart it forever. If the primary itself is killed,
 * Node ends the API processes with it (their IPC channel closes).
 */
export function superviseApiProcesses(processes: number, host: string): void {
  const listening = new Set<number>();
  let announced = false;
  let stopping = false;

  const start = (): Worker => cluster.fork();

  cluster.on('listening', (worker, address: AddressInfo) => {
    listening.add(worker.id);
    if (announced || listening.size < processes) return;
    announced = true;
    const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
    console.log(`API listening: http://${shownHost}:${address.port}/v1 (${processes} processes)`);
  });

  cluster.on('exit', (worker, code, signal) => {
    const wasServing = listening.delete(worker.id);
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit();
      return;
    }
    const how = signal ?? `exit code ${code}`;
    if (!wasServing) {
      console.error(`API process ${worker.process.pid} failed to start (${how}); stopping`);
      process.exitCode = 1;
      stopAll();
      return;
    }
    console.error(`API process ${worker.process.pid} ended (${how}); starting a replacement`);
    start();
  });

  const stopAll = (): void => {
    if (stopping) return;
    stopping = true;
    const workers = Object.values(cluster.workers ?? {});
    if (workers.length === 0) process.exit();
    // Each drains its open completions as a single-process API does on SIGTERM.
    for (const worker of workers) worker?.process.kill('SIGTERM');
  };
  process.on('SIGTERM', stopAll);
  process.on('SIGINT', stopAll);

  answerMetricsRequests();
  for (let index = 0; index < processes; index++) start();
}

/** An API process under the supervisor: only the supervisor's SIGTERM stops it (a terminal's Ctrl-C reaches the supervisor). */
export const isSupervisedApiProcess = (): boolean => cluster.isWorker;
