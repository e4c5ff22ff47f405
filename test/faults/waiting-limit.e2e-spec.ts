import { CompletionJobName, expressQueueName, workerQueueName } from '@app/contracts';
import type { CompletionJobData, CompletionResult, WorkerAnnouncement } from '@app/contracts';
import { connectRedis, createRedisConnection } from '@app/redis';
import type { RedisClient } from '@app/redis';
import { Queue } from 'bullmq';
import { randomUUID } from 'node:crypto';
import { WaitingLimit } from '@app/api';
import type { ModelRegistry } from '@app/api';
import { e2eStack } from '../support/stack-env';

/**
 * The model-wide waiting limit on a real Redis, on queues of a model of its own that no worker
 * serves (the workers the registry lists are made up), over a connection set up as the API's
 * command connection is.
 */
describe('WaitingLimit', () => {
  const model = 'waiting-limit-model';
  const prefix = '{llm:waiting-limit-test}';
  let redis: RedisClient;
  let queue: Queue<CompletionJobData, CompletionResult>;
  const others: Array<Queue<CompletionJobData, CompletionResult>> = [];
  let limit: WaitingLimit;
  let live: Array<Pick<WorkerAnnouncement, 'workerId' | 'slots'>> = [];
  const data = (jobId: string) => ({ id: jobId, model }) as CompletionJobData;
  const add = (jobId: string, most: number, target = queue) => limit.add(target, queue, CompletionJobName.ChatCompletion, data(jobId), { jobId }, most);
  const otherQueue = (name: string) => {
    const other = new Queue<CompletionJobData, CompletionResult>(name, { connection: redis, prefix });
    others.push(other);
    return other;
  };
  /** Commands of one connection run in order: once this answers, the background settles have run too. */
  const settled = () => redis.ping();

  beforeEach(async () => {
    redis = await connectRedis(createRedisConnection({ kind: 'standalone', url: e2eStack().redisUrl }, 'commands', 'waiting-limit-e2e'));
    queue = new Queue(`completions-limit-${randomUUID()}`, { connection: redis, prefix });
    live = [];
    limit = new WaitingLimit(redis, { liveWorkers: () => live } as unknown as ModelRegistry);
  });
  afterEach(async () => {
    for (const each of [queue, ...others.splice(0)]) {
      await each.obliterate({ force: true });
      await each.close();
    }
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
    await redis.zadd(queue.toKey('held-places'), Date.now(), queue.toKey('job-a'));
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

  it("counts the jobs waiting on the live workers' own queues and the express lane, and limits adds there too", async () => {
    live = [{ workerId: 'w1', slots: 2 }];
    const own = otherQueue(workerQueueName(model, 'w1'));
    const express = otherQueue(expressQueueName(model));
    expect([await add('job-a', 3, own), await add('job-b', 3, express), await add('job-c', 3), await add('job-d', 3, own)]).toEqual([true, true, true, false]);
    await settled();
    expect([await own.getWaitingCount(), await express.getWaitingCount(), await queue.getWaitingCount()]).toEqual([1, 1, 1]);
    // A worker no longer live has its queue moved elsewhere: it no longer counts here.
    live = [];
    expect(await add('job-e', 3)).toBe(true);
  });

  it("counts jobs taken beyond the live workers' sequences as waiting (held in a slot gate, active in BullMQ)", async () => {
    live = [{ workerId: 'w1', slots: 1 }];
    // Two jobs active on the shared queue and one on the worker's own: three taken, one sequence.
    await redis.rpush(queue.toKey('active'), 'taken-1', 'taken-2');
    await redis.rpush(`${prefix}:${workerQueueName(model, 'w1')}:active`, 'taken-3');
    expect([await add('job-a', 3), await add('job-b', 3)]).toEqual([true, false]);
    await redis.del(`${prefix}:${workerQueueName(model, 'w1')}:active`);
  });
});
