import { affinityMapKey, BATCH_PRIORITY, CompletionJobName, completionQueueName, completionQueuePrefix, workerQueueName } from '@app/contracts';
import type { CompletionJobData, CompletionResult } from '@app/contracts';
import { connectRedis, createRedisConnection } from '@app/redis';
import type { RedisClient } from '@app/redis';
import { Queue } from 'bullmq';
import { randomUUID } from 'node:crypto';
import { AffinityLookup } from '../../apps/api/src/pipeline/affinity-lookup';
import { e2eStack } from '../support/stack-env';

/**
 * The placement's one-script read on a real Redis: the key's worker and the waiting counts of its
 * own queue and of the shared one, on queues no worker serves.
 */
describe('AffinityLookup', () => {
  const model = `lookup-${randomUUID().slice(0, 8)}`;
  let redis: RedisClient;
  let shared: Queue<CompletionJobData, CompletionResult>;
  let own: Queue<CompletionJobData, CompletionResult>;
  let lookup: AffinityLookup;
  const data = { id: 'x' } as CompletionJobData;

  beforeAll(async () => {
    redis = await connectRedis(createRedisConnection({ kind: 'standalone', url: e2eStack().redisUrl }, 'commands', 'affinity-lookup-e2e'));
    const open = (name: string) => new Queue<CompletionJobData, CompletionResult>(name, { connection: redis, prefix: completionQueuePrefix(model) });
    [shared, own] = [open(completionQueueName(model)), open(workerQueueName(model, 'w1'))];
    lookup = new AffinityLookup(redis);
  });
  afterAll(async () => {
    for (const queue of [shared, own]) await queue.obliterate({ force: true });
    await Promise.all([shared.close(), own.close()]);
    await redis.del(affinityMapKey(model, 'k1'));
    redis.disconnect();
  });

  it('finds no worker for a key nobody served, and counts the shared queue all the same', async () => {
    await shared.add(CompletionJobName.ChatCompletion, data, { jobId: 'plain' });
    expect(await lookup.read(model, 'k0', shared)).toEqual({ workerId: undefined, waitingOnWorker: 0, waitingOnShared: 1 });
  });

  it("reads the key's worker and counts what waits on its queue and, as the depth limit does, on the shared one", async () => {
    await redis.set(affinityMapKey(model, 'k1'), 'w1', 'PX', 60_000);
    await own.add(CompletionJobName.ChatCompletion, data, { jobId: 'own-1' });
    await own.add(CompletionJobName.ChatCompletion, data, { jobId: 'own-2', priority: 5 });
    await shared.add(CompletionJobName.ChatCompletion, data, { jobId: 'tiered', priority: 7 });
    // A batch line waits below every request and does not count; a held place does.
    await shared.add(CompletionJobName.BatchLine, data, { jobId: 'line', priority: BATCH_PRIORITY });
    await redis.zadd(shared.toKey('held-places'), Date.now(), 'on-its-way');
    expect(await lookup.read(model, 'k1', shared)).toEqual({ workerId: 'w1', waitingOnWorker: 2, waitingOnShared: 3 });
  });
});
