import { CompletionJobName } from '@app/contracts';
import type { CompletionJobData, CompletionResult } from '@app/contracts';
import { connectRedis, createRedisConnection } from '@app/redis';
import type { RedisClient } from '@app/redis';
import { Queue } from 'bullmq';
import { randomUUID } from 'node:crypto';
import { WaitingLimit } from '@app/api';
import { e2eStack } from '../support/stack-env';

/**
 * The queue-depth limit on a real Redis, on a queue of its own that no worker serves, over a
 * connection set up as the API's command connection is.
 */
describe('WaitingLimit', () => {
  let redis: RedisClient;
  let queue: Queue<CompletionJobData, CompletionResult>;
  let limit: WaitingLimit;
  const data = (jobId: string) => ({ id: jobId }) as CompletionJobData;
  const add = (jobId: string, most: number) => limit.add(queue, CompletionJobName.ChatCompletion, data(jobId), { jobId }, most);
  /** Commands of one connection run in order: once this answers, the background settles have run too. */
  const settled = () => redis.ping();

  beforeEach(async () => {
    redis = await connectRedis(createRedisConnection({ kind: 'standalone', url: e2eStack().redisUrl }, 'commands', 'waiting-limit-e2e'));
    queue = new Queue(`completions-limit-${randomUUID()}`, { connection: redis, prefix: '{llm:waiting-limit-test}' });
    limit = new WaitingLimit(redis);
  });
  afterEach(async () => {
    await queue.obliterate({ force: true });
    await queue.close();
    redis.disconnect();
  });

  it('adds jobs up to the limit and refuses the rest, leaving nothing of a refused one', async () => {
    expect([await add('job-a', 2), await add('job-b', 2), await add('job-c', 2)]).toEqual([true, true, false]);
    await settled();
    expect(await queue.getWaitingCount()).toBe(2);
    expect(await redis.exists(queue.toKey('job-c'))).toBe(0);
    expect(await redis.zcard(queue.toKey('held-places'))).toBe(0);
  });

  it('never puts more than the limit in the queue when many jobs come at once', async () => {
    const outcomes = await Promise.all(Array.from({ length: 30 }, (_, index) => add(`job-${index}`, 5)));
    await settled();
    expect(outcomes.filter(Boolean)).toHaveLength(5);
    expect(await queue.getWaitingCount()).toBe(5);
  });

  it('counts a job once while its held place is not settled yet (added, its settle still on the way)', async () => {
    expect(await add('job-a', 2)).toBe(true);
    await settled();
    // The moment between job-a's add and its settle: it is in the queue and still holds a place.
    await redis.zadd(queue.toKey('held-places'), Date.now(), 'job-a');
    expect(await add('job-b', 2)).toBe(true);
    await settled();
    expect(await queue.getWaitingCount()).toBe(2);
    expect(await add('job-c', 2)).toBe(false);
  });

  it('answers a job sent again (as ioredis resends after a reconnect) without marking or losing it', async () => {
    expect(await add('job-a', 1)).toBe(true);
    await settled();
    // The queue is full now, and this very job is what fills it: it is in, and stays in.
    expect(await add('job-a', 1)).toBe(true);
    await settled();
    const job = queue.toKey('job-a');
    expect([await redis.exists(job), await redis.hexists(job, 'refused'), await redis.pttl(job)]).toEqual([1, 0, -1]);
    expect(await queue.getWaitingCount()).toBe(1);
  });
});
