import { completionQueueName, completionQueuePrefix } from '@app/contracts';
import { Queue } from 'bullmq';
import { resolve } from 'node:path';
import type { ManagedProcess } from '../../tools/local-stack/managed-process';
import type { LocalRedis } from '../../tools/local-stack/redis-server';
import { startRedisServer } from '../../tools/local-stack/redis-server';
import type { RunningApi } from '../../tools/local-stack/services';
import { REPO_ROOT, startApi, startWorker } from '../../tools/local-stack/services';

/** Process logs, apart for a jest project on another engine (its suites may run beside the default project's). */
const LOG_DIR = resolve(REPO_ROOT, globalThis.E2E_ENGINE ? `test-artifacts/logs-${globalThis.E2E_ENGINE}` : 'test-artifacts/logs');
export const STACK_API_KEY = 'sk-fault-test-key-0123456789';
export const STACK_MODEL = 'tiny-chat';

export interface StackOptions {
  /** Name used for log files. */
  name: string;
  workers?: number;
  parallelSequences?: number;
  apiEnv?: NodeJS.ProcessEnv;
  workerEnv?: NodeJS.ProcessEnv;
  /** Models the API accepts; defaults to the one the workers serve. */
  models?: string[];
  /** Keys every API accepts; STACK_API_KEY by default. */
  apiKeys?: string[];
}

/**
 * A private Redis, API and workers for a test that kills, stops or restarts them. Everything is
 * a real process; `stop` tears down whatever is still running.
 */
export class ServiceStack {
  readonly workers: ManagedProcess[] = [];
  readonly extraApis: RunningApi[] = [];
  private readonly queues: Queue[] = [];
  private workerCount = 0;
  private apiCount = 1;

  private constructor(
    readonly options: StackOptions,
    public redis: LocalRedis,
    public api: RunningApi,
  ) {}

  static async start(options: StackOptions): Promise<ServiceStack> {
    const redis = await startRedisServer({ logFile: resolve(LOG_DIR, `${options.name}-redis.log`) });
    const api = await startApi({
      redisUrl: redis.url,
      apiKeys: options.apiKeys ?? [STACK_API_KEY],
      models: options.models ?? [STACK_MODEL],
      env: options.apiEnv,
      logFile: resolve(LOG_DIR, `${options.name}-api.log`),
    });
    const stack = new ServiceStack(options, redis, api);
    for (let index = 0; index < (options.workers ?? 1); index++) await stack.addWorker();
    return stack;
  }

  get baseUrl(): string {
    return this.api.baseUrl;
  }

  /** Another API instance on the same Redis, as a second replica behind a load balancer. */
  async addApi(): Promise<RunningApi> {
    const logName = `${this.options.name}-api-${++this.apiCount}.log`;
    return startApi({
      redisUrl: this.redis.url,
      apiKeys: this.options.apiKeys ?? [STACK_API_KEY],
      models: this.options.models ?? [STACK_MODEL],
      env: this.options.apiEnv,
      logFile: resolve(LOG_DIR, logName),
    }).then((api) => {
      this.extraApis.push(api);
      return api;
    });
  }

  /** Kills Redis outright (no persistence: its queues are gone too). */
  async killRedis(): Promise<void> {
    await this.redis.process?.stop('SIGKILL');
  }

  /** Starts a fresh Redis on the same port, as a restarted server would come back. */
  async startRedisAgain(): Promise<void> {
    const port = Number(new URL(this.redis.url).port);
    this.redis = await startRedisServer({ port, logFile: resolve(LOG_DIR, `${this.options.name}-redis.log`) });
  }

  /** Starts a worker for `model` (a generated model in models/, tiny-chat by default, or the file `env.MODEL_PATH` names). */
  async addWorker(env: NodeJS.ProcessEnv = {}, model = STACK_MODEL): Promise<ManagedProcess> {
    const workerId = `${this.options.name}-worker-${++this.workerCount}`;
    const worker = await startWorker({
      redisUrl: this.redis.url,
      modelName: model,
      modelPath: env.MODEL_PATH ?? resolve(REPO_ROOT, `models/${model}.gguf`),
      workerId,
      parallelSequences: this.options.parallelSequences ?? 1,
      threads: 1,
      // Workers run the jest project's engine (jest.config.js) unless the test names one.
      env: { GPU: 'false', HEALTH_PORT: '0', ...(globalThis.E2E_ENGINE ? { ENGINE: globalThis.E2E_ENGINE } : {}), ...this.options.workerEnv, ...env },
      logFile: resolve(LOG_DIR, `${workerId}.log`),
    });
    this.workers.push(worker);
    return worker;
  }

  /** A BullMQ handle on the model's queue (or another of its queues, by name), to see what operators would see. */
  queue(model = STACK_MODEL, name = completionQueueName(model)): Queue {
    const queue = new Queue(name, { connection: { url: this.redis.url }, prefix: completionQueuePrefix(model) });
    queue.on('error', () => undefined); // Redis may be down on purpose
    this.queues.push(queue);
    return queue;
  }

  async stop(): Promise<void> {
    await Promise.all(this.queues.map((queue) => queue.close().catch(() => undefined)));
    const processes = [this.api.process, ...this.extraApis.map((api) => api.process), ...this.workers];
    await Promise.all(processes.map((process) => process.stop('SIGKILL')));
    await this.redis.stop();
  }
}

/** Polls `condition` until it holds; fails with `what` after `timeoutMs`. */
export async function waitFor<T>(what: string, condition: () => Promise<T | undefined | false>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition().catch(() => undefined);
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
