import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ManagedProcess } from './managed-process';

/**
 * The nearest folder above this code that holds a package.json: the repository here, and the
 * kit's `app/` when the benchmark runs bundled into gpu-kit (where this code sits one level lower).
 */
function projectRoot(from: string): string {
  for (let dir = from; dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(resolve(dir, 'package.json'))) return dir;
  }
  throw new Error(`no package.json above ${from}`);
}

export const REPO_ROOT = projectRoot(__dirname);
export const API_ENTRY = resolve(REPO_ROOT, 'dist/apps/api/apps/api/src/main.js');
export const WORKER_ENTRY = resolve(REPO_ROOT, 'dist/apps/worker/apps/worker/src/main.js');

export interface ApiOptions {
  redisUrl: string;
  apiKeys: string[];
  models: string[];
  port?: number;
  host?: string;
  /**
   * API_PROCESSES: 1 unless given, so that the API's pid is its one serving process (tests and
   * benchmarks kill, measure and profile it by pid); `'default'` leaves the service's own default.
   */
  processes?: number | 'default';
  logFile?: string;
  echo?: boolean;
  env?: NodeJS.ProcessEnv;
}

export interface RunningApi {
  /** e.g. http://127.0.0.1:8080/v1 */
  baseUrl: string;
  process: ManagedProcess;
}

/** Starts one API instance (built entry point) and waits until it listens. */
export async function startApi(options: ApiOptions): Promise<RunningApi> {
  const process_ = new ManagedProcess({
    name: 'api',
    command: process.execPath,
    args: [API_ENTRY],
    env: childEnv(options.env, {
      REDIS_URL: options.redisUrl,
      API_KEYS: options.apiKeys.join(','),
      MODELS: options.models.join(','),
      PORT: options.port ?? 0,
      HOST: options.host ?? '127.0.0.1',
      API_PROCESSES: options.processes === 'default' ? undefined : (options.processes ?? options.env?.API_PROCESSES ?? 1),
    }),
    logFile: options.logFile,
    echo: options.echo,
  });
  const [, baseUrl] = await process_.waitForOutput(/API listening: (\S+)/, 30_000);
  return { baseUrl, process: process_ };
}

export interface WorkerOptions {
  redisUrl: string;
  modelName: string;
  modelPath: string;
  parallelSequences?: number;
  threads?: number;
  workerId?: string;
  /** Port of the worker's health and metrics server; unless given here or in env, 0 (a free one: see workerHealthUrl). */
  healthPort?: number;
  logFile?: string;
  echo?: boolean;
  env?: NodeJS.ProcessEnv;
}

/** Environment for a child: this process's, then `extra`, then the options that were given. */
function childEnv(extra: NodeJS.ProcessEnv | undefined, given: Record<string, string | number | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  for (const [name, value] of Object.entries(given)) if (value !== undefined) env[name] = String(value);
  return env;
}

/** Starts one worker and waits until its model is loaded and it takes jobs. */
export async function startWorker(options: WorkerOptions): Promise<ManagedProcess> {
  const worker = new ManagedProcess({
    name: `worker${options.workerId ? `:${options.workerId}` : ''}`,
    command: process.execPath,
    args: [WORKER_ENTRY],
    env: childEnv(options.env, {
      REDIS_URL: options.redisUrl,
      MODEL_NAME: options.modelName,
      MODEL_PATH: options.modelPath,
      PARALLEL_SEQUENCES: options.parallelSequences,
      ENGINE_THREADS: options.threads,
      WORKER_ID: options.workerId,
      HEALTH_PORT: options.healthPort ?? options.env?.HEALTH_PORT ?? process.env.HEALTH_PORT ?? 0,
    }),
    logFile: options.logFile,
    echo: options.echo,
  });
  await worker.waitForOutput(/worker \S+ ready/, 120_000);
  return worker;
}

/** The base URL of a worker's health and metrics server (e.g. http://127.0.0.1:9464), as it printed it at start-up. */
export async function workerHealthUrl(worker: ManagedProcess, timeoutMs = 10_000): Promise<string> {
  const [, url] = await worker.waitForOutput(/worker health listening on (http:\/\/[\w.:[\]-]+)/, timeoutMs);
  return url;
}
