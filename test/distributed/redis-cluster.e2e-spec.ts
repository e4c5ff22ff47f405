import { completionQueueName, completionQueuePrefix } from '@app/contracts';
import { Queue } from 'bullmq';
import { Cluster, Redis } from 'ioredis';
import OpenAI from 'openai';
import { resolve } from 'node:path';
import type { ManagedProcess } from '../../tools/local-stack/managed-process';
import type { LocalRedisCluster } from '../../tools/local-stack/redis-cluster';
import { startRedisCluster } from '../../tools/local-stack/redis-cluster';
import type { RunningApi } from '../../tools/local-stack/services';
import { REPO_ROOT, startApi, startWorker } from '../../tools/local-stack/services';
import { longRequest, postChat, readStream } from '../support/chat-requests';
import { ModelQueues } from '../support/model-queues';
import { waitFor } from '../support/service-stack';

const KEY = 'sk-cluster-test-0123456789';
const MODEL = 'tiny-chat';
const LOG_DIR = resolve(REPO_ROOT, 'test-artifacts/logs');

/**
 * The service on a real Redis Cluster (three primaries, three replicas) started from
 * redis-server binaries: queues keep their keys in one slot, token events travel on sharded
 * pub/sub, and the API and worker use ioredis's cluster client.
 */
describe('on Redis Cluster', () => {
  let cluster: LocalRedisCluster;
  let api: RunningApi;
  let worker: ManagedProcess;
  let client: OpenAI;
  let queue: Queue;
  let queueConnection: Cluster;
  /** The shared queue and the worker's own (prefix-cache affinity places a repeated prompt there). */
  let modelQueues: ModelQueues;
  const nodeClients: Redis[] = [];

  beforeAll(async () => {
    cluster = await startRedisCluster(3, 1);
    const env = { REDIS_CLUSTER_NODES: cluster.nodes.slice(0, 3).join(',') };
    worker = await startWorker({
      redisUrl: 'redis://unused:6379',
      modelName: MODEL,
      modelPath: resolve(REPO_ROOT, 'models/tiny-chat.gguf'),
      workerId: 'cluster-worker',
      parallelSequences: 2,
      threads: 1,
      env: { ...env, GPU: 'false', HEALTH_PORT: '0' },
      logFile: resolve(LOG_DIR, 'cluster-worker.log'),
    });
    api = await startApi({ redisUrl: 'redis://unused:6379', apiKeys: [KEY], models: [MODEL], env, logFile: resolve(LOG_DIR, 'cluster-api.log') });
    client = new OpenAI({ baseURL: api.baseUrl, apiKey: KEY, maxRetries: 0 });
    const [host, port] = cluster.nodes[0].split(':');
    queueConnection = new Cluster([{ host, port: Number(port) }], { redisOptions: { maxRetriesPerRequest: null } });
    queue = new Queue(completionQueueName(MODEL), {
      connection: queueConnection,
      prefix: completionQueuePrefix(MODEL),
    });
    modelQueues = new ModelQueues(queueConnection, MODEL, ['cluster-worker']);
    for (const node of cluster.nodes) {
      const [nodeHost, nodePort] = node.split(':');
      nodeClients.push(new Redis(Number(nodePort), nodeHost));
    }
  });

  // Clients quit before the cluster dies: BullMQ leaves a connection it was given open, and a
  // Cluster client outliving its nodes keeps refreshing slots (and the test process alive).
  afterAll(async () => {
    await queue?.close();
    await modelQueues?.close();
    await queueConnection?.quit();
    await Promise.all(nodeClients.map((node) => node.quit()));
    await Promise.all([api?.process.stop(), worker?.stop()]);
    await cluster?.stop();
  });

  it('answers non-stream and stream requests', async () => {
    const whole = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Hello' }], max_tokens: 20, seed: 9 });
    expect(whole.choices[0].message.content).toMatch(/[a-z]{2,}/);
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'Hello' }],
      max_tokens: 20,
      seed: 9,
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe(whole.choices[0].message.content);
  });

  it("keeps every key of the model's queue in one hash slot", async () => {
    const keys = (await Promise.all(nodeClients.map((node) => node.keys(`${completionQueuePrefix(MODEL)}:*`)))).flat();
    expect(keys.length).toBeGreaterThan(3);
    const slots = new Set(await Promise.all(keys.map((key) => nodeClients[0].cluster('KEYSLOT', key))));
    expect(slots.size).toBe(1);
  });

  it('carries token events on a sharded channel held by one node, not broadcast to all', async () => {
    const response = await postChat(api.baseUrl, KEY, longRequest(MODEL, { stream: true, max_tokens: 2000 }));
    let seen: { shard: number; classic: number } | undefined;
    await readStream(response, (event) => {
      if (seen || typeof event.id !== 'string') return;
      const completionId = event.id;
      void (async () => {
        const job = await modelQueues.findJob(completionId);
        const channel = job?.data.replyTo.channel ?? '';
        return Promise.all(
          nodeClients.map(async (node) => ({
            shard: ((await node.call('PUBSUB', 'SHARDNUMSUB', channel)) as [string, number])[1],
            classic: ((await node.call('PUBSUB', 'NUMSUB', channel)) as [string, number])[1],
          })),
        );
      })().then((counts) => {
        seen = counts.reduce((sum, count) => ({ shard: sum.shard + count.shard, classic: sum.classic + count.classic }), { shard: 0, classic: 0 });
      });
    });
    await waitFor('the subscription counts', () => Promise.resolve(seen));
    expect(seen).toEqual({ shard: 1, classic: 0 });
  });

  it('cancels a running job when its client disconnects', async () => {
    const controller = new AbortController();
    const response = await postChat(api.baseUrl, KEY, longRequest(MODEL, { stream: true }), controller.signal);
    let id = '';
    await readStream(response, (event, reading) => {
      id ||= event.id as string;
      return reading.content.length > 20;
    });
    controller.abort();
    const job = await waitFor('the job to end', async () => {
      const found = await modelQueues.findJob(id);
      return found?.finishedOn ? found : undefined;
    });
    expect(job.failedReason).toMatch(/cancelled/);
  });
});
