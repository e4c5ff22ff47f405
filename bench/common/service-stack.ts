import { resolve } from 'node:path';
import { Redis } from 'ioredis';
import type { ManagedProcess } from '../../tools/local-stack/managed-process';
import { startRedisServer } from '../../tools/local-stack/redis-server';
import type { LocalRedis } from '../../tools/local-stack/redis-server';
import { REPO_ROOT, startApi, startWorker } from '../../tools/local-stack/services';
import type { EngineSpec, GpuSetting, HttpTarget } from './driver-protocol';
import { whenInterrupted } from './cleanup';
import { InspectorClient } from '../service/inspector-client';

export const BENCH_MODEL = 'tiny-chat';
const API_KEY = 'sk-bench-0123456789abcdef';
/** Raw logs and profiles: kept out of the repository (test-artifacts/ is ignored). */
export const ARTIFACTS_DIR = resolve(REPO_ROOT, 'test-artifacts/bench');

/** The whole service as separate processes: Redis, one worker with `engine`, one API. */
export interface ServiceStack {
  target: HttpTarget;
  redisUrl: string;
  /** The API's is its supervisor's when it runs several processes (CpuMeter counts its children). */
  pids: { api: number; worker: number; redis: number };
  /** The API process's inspector (memory after GC, CPU profiles); only when it runs one process. */
  inspector: InspectorClient | undefined;
  /** Connections Redis holds whose name starts with `prefix` (the API names its own `api-…`). */
  redisClients(prefix: string): Promise<number>;
  stop(): Promise<void>;
}

/** llama.cpp's backend, as the worker's GPU variable names it: `false` is the CPU. */
export const GPU_SETTINGS: readonly GpuSetting[] = ['auto', 'cuda', 'vulkan', 'metal', 'false'];

/**
 * An engine as the benchmark runs it, both alone and in the worker: the llama.cpp one on `gpu`
 * (the CPU when absent, as by default; `npm run bench -- --gpu cuda` sets it).
 */
function workerEnv(engine: StackEngine): NodeJS.ProcessEnv {
  if (engine.kind === 'openai')
    return {
      ENGINE: 'openai',
      UPSTREAM_BASE_URL: engine.baseUrl,
      UPSTREAM_MODEL: BENCH_MODEL,
      UPSTREAM_MAX_CONCURRENCY: String(engine.maxConcurrency),
      CONTEXT_SIZE: String(engine.contextSize),
    };
  if (engine.kind !== 'synthetic')
    return { ENGINE: engine.kind, GPU: engine.gpu ?? 'false', CONTEXT_SIZE: String(engine.contextSize), ENGINE_CPUS: engine.engineCpus ?? '' };
  return {
    ENGINE: 'synthetic',
    SYNTHETIC_TOKENS: String(engine.tokens),
    SYNTHETIC_TOKEN_INTERVAL_MS: String(engine.tokenIntervalMs),
    SYNTHETIC_SLOTS: String(engine.slots),
    CONTEXT_SIZE: String(engine.contextSize),
  };
}

/** An engine the stack's worker runs: one the benchmark also drives alone, or an OpenAI-compatible upstream (ENGINE=openai). */
export type StackEngine = EngineSpec | { kind: 'openai'; baseUrl: string; maxConcurrency: number; contextSize: number };

const isLlama = (engine: StackEngine): engine is Extract<EngineSpec, { kind: 'llama' | 'llama-server' }> =>
  engine.kind === 'llama' || engine.kind === 'llama-server';

/**
 * Starts a fresh Redis, worker and API, so that nothing one phase left in Redis reaches the next.
 * `apiProcesses` is the API's API_PROCESSES; `apiEnv`, more of the API's settings.
 */
export async function startServiceStack(label: string, engine: StackEngine, apiProcesses = 1, apiEnv: NodeJS.ProcessEnv = {}): Promise<ServiceStack> {
  const logFile = (part: string): string => resolve(ARTIFACTS_DIR, 'logs', `${label}-${part}.log`);
  const started: Array<{ stop: () => Promise<unknown> }> = [];
  const forget = whenInterrupted(() => Promise.allSettled([...started].reverse().map((part) => part.stop())));
  try {
    const redis: LocalRedis = await startRedisServer({ logFile: logFile('redis') });
    started.push(redis);
    const worker: ManagedProcess = await startWorker({
      redisUrl: redis.url,
      modelName: BENCH_MODEL,
      modelPath: isLlama(engine) ? engine.modelPath : resolve(REPO_ROOT, 'models/tiny-chat.gguf'),
      parallelSequences: isLlama(engine) ? engine.parallelSequences : undefined,
      threads: isLlama(engine) ? engine.threads : 1,
      workerId: `bench-${label}`,
      env: workerEnv(engine),
      logFile: logFile('worker'),
    });
    // Workers finishing long synthetic jobs would hold shutdown up: they are benchmark leftovers.
    started.push({ stop: () => worker.stop('SIGTERM', 3000) });
    const api = await startApi({
      redisUrl: redis.url,
      apiKeys: [API_KEY],
      models: [BENCH_MODEL],
      processes: apiProcesses,
      logFile: logFile('api'),
      env: {
        NODE_OPTIONS: [process.env.NODE_OPTIONS, apiProcesses === 1 ? '--inspect=127.0.0.1:0' : ''].filter(Boolean).join(' '),
        // The benchmark measures throughput and latency, not admission control: nothing is refused for waiting.
        MAX_WAITING_JOBS: '1000000',
        MAX_QUEUE_WAIT_MS: '600000',
        ...apiEnv,
      },
    });
    started.push({ stop: () => api.process.stop('SIGTERM', 10_000) });
    let inspector: InspectorClient | undefined;
    if (apiProcesses === 1) {
      const inspectorUrl = InspectorClient.inspectorUrlIn(api.process.recentOutput);
      if (!inspectorUrl) throw new Error(`the API printed no inspector address:\n${api.process.recentOutput}`);
      inspector = await InspectorClient.connect(inspectorUrl);
    }
    const admin = new Redis(redis.url, { connectionName: 'bench-admin', maxRetriesPerRequest: 1 });

    return {
      target: { baseUrl: api.baseUrl, apiKey: API_KEY, model: BENCH_MODEL },
      redisUrl: redis.url,
      pids: { api: api.process.pid ?? 0, worker: worker.pid ?? 0, redis: redis.process?.pid ?? 0 },
      inspector,
      async redisClients(prefix: string): Promise<number> {
        const list = (await admin.call('CLIENT', 'LIST')) as string;
        return list.split('\n').filter((line) => new RegExp(`\\bname=${prefix}`).test(line)).length;
      },
      async stop(): Promise<void> {
        forget();
        inspector?.close();
        admin.disconnect();
        for (const part of started.reverse()) await part.stop();
      },
    };
  } catch (error) {
    forget();
    for (const part of started.reverse()) await part.stop();
    throw error;
  }
}
