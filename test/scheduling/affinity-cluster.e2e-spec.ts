import { affinityMapKey, completionQueueName, completionQueuePrefix, workerQueueName } from '@app/contracts';
import { Queue } from 'bullmq';
import { Cluster } from 'ioredis';
import OpenAI from 'openai';
import { resolve } from 'node:path';
import type { ManagedProcess } from '../../tools/local-stack/managed-process';
import type { LocalRedisCluster } from '../../tools/local-stack/redis-cluster';
import { startRedisCluster } from '../../tools/local-stack/redis-cluster';
import type { RunningApi } from '../../tools/local-stack/services';
import { REPO_ROOT, startApi, startWorker } from '../../tools/local-stack/services';
import { waitFor } from '../support/service-stack';

const KEY = 'sk-affinity-cluster-0123456789';
const MODEL = 'tiny-chat';
const LOG_DIR = resolve(REPO_ROOT, 'test-artifacts/logs');
const AFFINITY_WAIT_MS = 1000;
const WORKER_IDS = ['cluster-affinity-1', 'cluster-affinity-2', 'cluster-affinity-3'];

/**
 * Prefix-cache affinity on a real Redis Cluster (three primaries): a worker's own queue sits in
 * the model's slot with the shared queue, the key → worker map in slots of its own, and no
 * command spans them; turns stick to their worker, and a killed worker's next turn moves.
 */
describe('prefix-cache affinity on Redis Cluster', () => {
  let cluster: LocalRedisCluster;
  let api: RunningApi;
  const workers: ManagedProcess[] = [];
  let client: OpenAI;
  let connection: Cluster;
  const queues = new Map<string, Queue>();

  beforeAll(async () => {
    cluster = await startRedisCluster(3, 0);
    const env = { REDIS_CLUSTER_NODES: cluster.nodes.join(',') };
    for (const workerId of WORKER_IDS) {
      workers.push(
        await startWorker({
          redisUrl: 'redis://unused:6379',
          modelName: MODEL,
          modelPath: resolve(REPO_ROOT, `models/${MODEL}.gguf`),
          workerId,
          parallelSequences: 2,
          threads: 1,
          env: { ...env, GPU: 'false', HEALTH_PORT: '0' },
          logFile: resolve(LOG_DIR, `${workerId}.log`),
        }),
      );
    }
    api = await startApi({
      redisUrl: 'redis://unused:6379',
      apiKeys: [KEY],
      models: [MODEL],
      env: { ...env, AFFINITY: 'true', AFFINITY_WAIT_MS: String(AFFINITY_WAIT_MS) },
      logFile: resolve(LOG_DIR, 'cluster-affinity-api.log'),
    });
    client = new OpenAI({ baseURL: api.baseUrl, apiKey: KEY, maxRetries: 0 });
    const [host, port] = cluster.nodes[0].split(':');
    connection = new Cluster([{ host, port: Number(port) }], { redisOptions: { maxRetriesPerRequest: null } });
    for (const name of [completionQueueName(MODEL), ...WORKER_IDS.map((workerId) => workerQueueName(MODEL, workerId))]) {
      queues.set(name, new Queue(name, { connection, prefix: completionQueuePrefix(MODEL) }));
    }
  }, 180_000);

  afterAll(async () => {
    await Promise.all([...queues.values()].map((queue) => queue.close()));
    await connection?.quit();
    await Promise.all([api?.process.stop(), ...workers.map((worker) => worker.stop())]);
    await cluster?.stop();
  });

  const servedBy = (id: string) =>
    waitFor(`job ${id} finished`, async () => {
      const found = (await Promise.all([...queues.entries()].map(async ([queue, handle]) => ({ queue, job: await handle.getJob(id) })))).filter(
        ({ job }) => job !== undefined,
      );
      return (
        found.length > 0 &&
        found.every(({ job }) => job!.finishedOn !== undefined) &&
        found.map(({ queue, job }) => ({ queue, worker: job!.processedBy, attempts: job!.attemptsStarted }))
      );
    });

  const system = `You are a storyteller. ${'Every tale you tell is about a queen who plays croquet with flamingos. '.repeat(12)}`;
  const ask = (history: OpenAI.ChatCompletionMessageParam[], question: string) =>
    client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'system', content: system }, ...history, { role: 'user', content: question }],
      prompt_cache_key: 'croquet',
      max_tokens: 12,
      temperature: 0,
    });

  it("places a conversation's turns on its worker's own queue, keeps its map entry in the queues' slot, and moves a killed worker's next turn", async () => {
    const first = await ask([], 'Who plays?');
    const [{ worker }] = await servedBy(first.id);
    const history: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Who plays?' },
      { role: 'assistant', content: first.choices[0].message.content },
    ];
    const second = await ask(history, 'And who wins?');
    expect(await servedBy(second.id)).toEqual([{ queue: workerQueueName(MODEL, worker!), worker, attempts: 1 }]);
    expect(second.usage!.prompt_tokens_details!.cached_tokens).toBeGreaterThanOrEqual(first.usage!.prompt_tokens + first.usage!.completion_tokens - 3);

    const slotOf = (key: string) => connection.cluster('KEYSLOT', key);
    const mapKey = (
      await connection
        .nodes('master')
        .reduce<Promise<string[]>>(async (found, node) => [...(await found), ...(await node.keys(affinityMapKey(MODEL, '*')))], Promise.resolve([]))
    )[0];
    expect(await connection.get(mapKey)).toBe(worker);
    expect(mapKey.startsWith(affinityMapKey(MODEL, ''))).toBe(true);
    expect(await slotOf(mapKey)).toBe(await slotOf(`${completionQueuePrefix(MODEL)}:${completionQueueName(MODEL)}:wait`));
    expect(await slotOf(`${completionQueuePrefix(MODEL)}:${workerQueueName(MODEL, worker!)}:wait`)).toBe(
      await slotOf(`${completionQueuePrefix(MODEL)}:${completionQueueName(MODEL)}:wait`),
    );

    await workers.find((process) => process.name === `worker:${worker}`)!.stop('SIGKILL');
    const startedAt = Date.now();
    const third = await ask(
      [...history, { role: 'user', content: 'And who wins?' }, { role: 'assistant', content: second.choices[0].message.content }],
      'And then?',
    );
    expect(Date.now() - startedAt).toBeLessThan(AFFINITY_WAIT_MS + 3000);
    const [moved, ...others] = await servedBy(third.id);
    expect(others).toEqual([]);
    expect(moved.queue).toBe(completionQueueName(MODEL));
    expect(moved.worker).not.toBe(worker);
    expect(moved.attempts).toBe(1);
  });

  it('retries a turn on another worker when the worker running it from its own queue is SIGKILLed', async () => {
    const first = await ask([], 'Who keeps the score?');
    const [{ worker }] = await servedBy(first.id);
    const ownQueue = queues.get(workerQueueName(MODEL, worker!))!;
    const long = client.chat.completions.create({
      model: MODEL,
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: 'Who keeps the score?' },
        { role: 'assistant', content: first.choices[0].message.content },
        { role: 'user', content: 'Tell me everything.' },
      ],
      prompt_cache_key: 'croquet',
      max_tokens: 3000,
      temperature: 0,
    });
    const running = await waitFor("the next turn running from its worker's own queue", async () => (await ownQueue.getJobs(['active']))[0]);
    await workers.find((process) => process.name === `worker:${worker}`)!.stop('SIGKILL');
    const answer = await long;
    expect(answer.id).toBe(running.id);
    expect(answer.choices[0].message.content!.length).toBeGreaterThan(0);
    const [moved, ...others] = await servedBy(answer.id);
    expect(others).toEqual([]);
    expect(moved.queue).toBe(completionQueueName(MODEL));
    expect(moved.worker).not.toBe(worker);
    expect((await queues.get(completionQueueName(MODEL))!.getJob(answer.id))!.data).toMatchObject({ schedule: { attemptsBefore: 1 } });
  });
});
