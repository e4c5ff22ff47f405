import { completionQueueName, completionQueuePrefix } from '@app/contracts';
import { Queue } from 'bullmq';
import { Cluster } from 'ioredis';
import OpenAI from 'openai';
import { resolve } from 'node:path';
import type { ManagedProcess } from '../../tools/local-stack/managed-process';
import type { LocalRedisCluster } from '../../tools/local-stack/redis-cluster';
import { startRedisCluster } from '../../tools/local-stack/redis-cluster';
import type { RunningApi } from '../../tools/local-stack/services';
import { REPO_ROOT, startApi, startWorker } from '../../tools/local-stack/services';
import { Backlog } from '../support/queue-backlog';

const HEAVY_KEY = 'sk-fair-cluster-heavy-0123456789';
const LIGHT_KEY = 'sk-fair-cluster-light-0123456789';
const MODEL = 'slow-synthetic';
const LOG_DIR = resolve(REPO_ROOT, 'test-artifacts/logs');

/**
 * Fair share on a real Redis Cluster (three primaries): the counters share the queue's hash tag,
 * so the admission script, which reads the queue's prioritized set, runs in the model's slot.
 */
describe('fair share between API keys on Redis Cluster', () => {
  let cluster: LocalRedisCluster;
  let api: RunningApi;
  let worker: ManagedProcess;
  let connection: Cluster;
  let queue: Queue;

  beforeAll(async () => {
    cluster = await startRedisCluster(3, 0);
    const env = { REDIS_CLUSTER_NODES: cluster.nodes.join(',') };
    worker = await startWorker({
      redisUrl: 'redis://unused:6379',
      modelName: MODEL,
      modelPath: resolve(REPO_ROOT, 'models/tiny-chat.gguf'),
      workerId: 'cluster-fair-share',
      parallelSequences: 1,
      threads: 1,
      env: { ...env, GPU: 'false', HEALTH_PORT: '0', ENGINE: 'synthetic', SYNTHETIC_TOKENS: '300', SYNTHETIC_TOKEN_INTERVAL_MS: '10', SYNTHETIC_SLOTS: '1' },
      logFile: resolve(LOG_DIR, 'cluster-fair-share-worker.log'),
    });
    api = await startApi({
      redisUrl: 'redis://unused:6379',
      apiKeys: [HEAVY_KEY, LIGHT_KEY],
      models: [MODEL],
      env: { ...env, FAIR_SHARE: 'true' },
      logFile: resolve(LOG_DIR, 'cluster-fair-share-api.log'),
    });
    const [host, port] = cluster.nodes[0].split(':');
    connection = new Cluster([{ host, port: Number(port) }], { redisOptions: { maxRetriesPerRequest: null } });
    queue = new Queue(completionQueueName(MODEL), { connection, prefix: completionQueuePrefix(MODEL) });
  }, 180_000);

  afterAll(async () => {
    await queue?.close();
    await connection?.quit();
    await Promise.all([api?.process.stop(), worker?.stop()]);
    await cluster?.stop();
  });

  it("starts a light key's request before a heavy key's backlog", async () => {
    const heavy = new OpenAI({ baseURL: api.baseUrl, apiKey: HEAVY_KEY, maxRetries: 0 });
    const light = new OpenAI({ baseURL: api.baseUrl, apiKey: LIGHT_KEY, maxRetries: 0 });
    const backlog = await Backlog.behindBusySlot(queue, MODEL, heavy);
    const heavyQueued = await backlog.add(heavy, 4);
    const [lightQueued] = await backlog.add(light, 1);
    const started = await backlog.startTimes();
    for (const index of heavyQueued) expect(started[lightQueued]).toBeLessThan(started[index]);
  }, 30_000);
});
