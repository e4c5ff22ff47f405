import { existsSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import type { LocalRedis } from '../../tools/local-stack/redis-server';
import { dockerEngineAvailable, startRedisServer, waitForRedis } from '../../tools/local-stack/redis-server';
import type { ManagedProcess } from '../../tools/local-stack/managed-process';
import { API_ENTRY, REPO_ROOT, WORKER_ENTRY, startApi, startWorker, workerHealthUrl } from '../../tools/local-stack/services';
import { scrubServiceEnv } from './hermetic-env';
import { publishStack } from './stack-env';

export const LOG_DIR = resolve(REPO_ROOT, 'test-artifacts/logs');
const API_KEY = 'sk-e2e-test-key-0123456789';
const MODEL = 'tiny-chat';
const MODEL_PATH = resolve(REPO_ROOT, 'models/tiny-chat.gguf');
const ADMIN = { user: 'ops', password: 'e2e-admin-password-0123' };

interface StartedStack {
  redis?: LocalRedis;
  processes: ManagedProcess[];
}

declare global {
  var __E2E_STACKS__: StartedStack[] | undefined;
}

/**
 * Redis comes from REDIS_URL when set (for the default engine's stack only: another engine's
 * workers must not take its jobs), else a Testcontainers Redis when a Docker engine answers,
 * else a redis-server started here on a free port.
 */
async function provideRedis(engine: string | undefined, logDir: string): Promise<{ url: string; redis?: LocalRedis }> {
  if (process.env.REDIS_URL && !engine) {
    await waitForRedis(process.env.REDIS_URL);
    return { url: process.env.REDIS_URL };
  }
  if (dockerEngineAvailable()) {
    const { RedisContainer } = await import('@testcontainers/redis');
    const container = await new RedisContainer('redis:7-alpine').start();
    const url = container.getConnectionUrl();
    return { url, redis: { url, stop: async () => void (await container.stop()) } };
  }
  const redis = await startRedisServer({ logFile: resolve(logDir, 'redis.log') });
  return { url: redis.url, redis };
}

/**
 * Two workers and two API instances on one Redis: every e2e test talks to a real, scaled-out
 * stack. The `e2e` project's stack runs the workers' default engine; another project runs its
 * engine on a stack of its own, logged apart (global-setup-llama-server.ts: jest runs one global
 * setup per module, so each engine has its own).
 */
export default function globalSetup(): Promise<void> {
  return startSharedStack(undefined);
}

export async function startSharedStack(engine: string | undefined): Promise<void> {
  for (const entry of [API_ENTRY, WORKER_ENTRY, MODEL_PATH]) {
    if (!existsSync(entry)) throw new Error(`${entry} is missing: run \`npm run build && npm run model\` (npm test does)`);
  }
  const logDir = engine ? `${LOG_DIR}-${engine}` : LOG_DIR;
  rmSync(logDir, { recursive: true, force: true });
  const stack: StartedStack = { processes: [] };
  globalThis.__E2E_STACKS__ = [...(globalThis.__E2E_STACKS__ ?? []), stack];

  const { url, redis } = await provideRedis(engine, logDir);
  stack.redis = redis;
  // The stack and every test file get the settings they are given, none of the shell's.
  scrubServiceEnv();
  const workerIds = ['worker-a', 'worker-b'];
  const workers = await Promise.all(
    workerIds.map((workerId) =>
      startWorker({
        redisUrl: url,
        modelName: MODEL,
        modelPath: MODEL_PATH,
        workerId,
        parallelSequences: 2,
        threads: 1,
        env: { GPU: 'false', HEALTH_PORT: '0', ...(engine ? { ENGINE: engine } : {}) },
        logFile: resolve(logDir, `${workerId}.log`),
      }),
    ),
  );
  stack.processes.push(...workers);
  const workerHealthUrls = await Promise.all(workers.map((worker) => workerHealthUrl(worker)));
  const apis = await Promise.all(
    ['api-a', 'api-b'].map((name) =>
      startApi({
        redisUrl: url,
        apiKeys: [API_KEY],
        models: [MODEL],
        env: { ADMIN_USER: ADMIN.user, ADMIN_PASSWORD: ADMIN.password },
        logFile: resolve(logDir, `${name}.log`),
      }),
    ),
  );
  stack.processes.push(...apis.map((api) => api.process));

  publishStack(engine, {
    redisUrl: url,
    apiUrls: apis.map((api) => api.baseUrl),
    apiKey: API_KEY,
    model: MODEL,
    modelPath: MODEL_PATH,
    workerIds,
    workerHealthUrls,
    admin: ADMIN,
  });
}
