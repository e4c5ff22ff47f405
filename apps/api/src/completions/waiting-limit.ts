import { Inject, Injectable } from '@nestjs/common';
import { BATCH_SCORE_FLOOR } from '@app/contracts';
import type { CompletionJobData } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import type { JobsOptions } from 'bullmq';
import { COMMANDS_REDIS } from '../redis/api-redis.module';
import type { CompletionQueue } from './completion-queues';

/** How long a held place counts at most (an API instance that died holding one leaks nothing for long). */
const HOLD_MS = 10_000;

/**
 * The jobs waiting on a queue as its depth limit counts them, for every script that reads that
 * depth: the wait list, the prioritized jobs above the batch lines' floor (batch lines are fed in
 * bounded numbers and never fill the queue for others), and the places held for jobs on their way;
 * a held place whose job is in the queue already (added, its settle not yet run) counts once, as
 * that job. Job keys are built from the queue's key prefix (the queue's slot on a cluster).
 */
export const SHARED_QUEUE_WAITING_LUA = `
local function sharedQueueWaiting(wait, prioritized, held, batchScoreFloor, jobKeyPrefix)
  local onTheirWay = 0
  for _, id in ipairs(redis.call('ZRANGE', held, 0, -1)) do
    if redis.call('EXISTS', jobKeyPrefix .. id) == 0 then onTheirWay = onTheirWay + 1 end
  end
  return redis.call('LLEN', wait) + redis.call('ZCOUNT', prioritized, '-inf', '(' .. batchScoreFloor) + onTheirWay
end
`;

/**
 * KEYS: the queue's wait list, its prioritized set, the held places, the new job's key. ARGV: the
 * limit, hold ms, the job's id, the lowest prioritized score of a batch line, the queue's key
 * prefix. Drops held places past their time (server time, not the caller's), then counts the
 * waiting jobs (SHARED_QUEUE_WAITING_LUA). Below the limit it holds a place; at the limit it takes
 * the job's key instead, for BullMQ ignores an add whose job id exists. Run again (ioredis resends
 * what went unanswered before a reconnect), it never marks a job that is in, and one it refused
 * stays refused.
 */
const HOLD_OR_REFUSE_LUA = `${SHARED_QUEUE_WAITING_LUA}
if redis.call('EXISTS', KEYS[4]) == 1 then
  if redis.call('HEXISTS', KEYS[4], 'refused') == 1 then return 0 end
  return 1
end
local now = redis.call('TIME')
local nowMs = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', nowMs - tonumber(ARGV[2]))
local waiting = sharedQueueWaiting(KEYS[1], KEYS[2], KEYS[3], ARGV[4], ARGV[5])
if waiting >= tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[4], 'refused', 'queue_full')
  redis.call('PEXPIRE', KEYS[4], ARGV[2])
  return 0
end
redis.call('ZADD', KEYS[3], nowMs, ARGV[3])
redis.call('PEXPIRE', KEYS[3], ARGV[2])
return 1
`;

/** KEYS: the held places, the job's key. ARGV: the job's id. Gives the place up, or removes a refusal's mark. */
const SETTLE_LUA = `
redis.call('ZREM', KEYS[1], ARGV[1])
if redis.call('HGET', KEYS[2], 'refused') then redis.call('DEL', KEYS[2]) end
return 0
`;

type WithWaitingLimit = RedisClient & {
  holdPlaceOrRefuse(
    wait: string,
    prioritized: string,
    held: string,
    job: string,
    limit: number,
    holdMs: number,
    id: string,
    batchScoreFloor: number,
    keyPrefix: string,
  ): Promise<number>;
  settlePlace(held: string, job: string, id: string): Promise<number>;
};

/**
 * The queue-depth limit, applied as the job is added and without a round trip of its own: one
 * script holds a place (or refuses), and BullMQ's add follows it on the same connection at once.
 * Held places count as waiting, so requests that arrive together, from any API instance, never
 * put more than the limit in the queue. The keys share the queue's hash tag, so it also runs on
 * a cluster.
 */
@Injectable()
export class WaitingLimit {
  private readonly redis: WithWaitingLimit;

  constructor(@Inject(COMMANDS_REDIS) redis: RedisClient) {
    redis.defineCommand('holdPlaceOrRefuse', { numberOfKeys: 4, lua: HOLD_OR_REFUSE_LUA });
    redis.defineCommand('settlePlace', { numberOfKeys: 2, lua: SETTLE_LUA });
    this.redis = redis as WithWaitingLimit;
  }

  /** Adds the job unless `limit` jobs wait already (false: nothing was added). */
  async add(queue: CompletionQueue, name: string, data: CompletionJobData, options: JobsOptions & { jobId: string }, limit: number): Promise<boolean> {
    const { jobId } = options;
    const [held, job] = [queue.toKey('held-places'), queue.toKey(jobId)];
    // Not awaited: Redis runs commands of one connection in order, so the add comes after it.
    const place = this.redis.holdPlaceOrRefuse(
      queue.toKey('wait'),
      queue.toKey('prioritized'),
      held,
      job,
      limit,
      HOLD_MS,
      jobId,
      BATCH_SCORE_FLOOR,
      queue.toKey(''),
    );
    const added = queue.add(name, data, options);
    try {
      const [placed] = await Promise.all([place, added]);
      return placed === 1;
    } finally {
      // The job counts itself now, if it is in the queue at all.
      this.redis.settlePlace(held, job, jobId).catch(() => undefined); // both expire by themselves anyway
    }
  }
}
