import { Inject, Injectable } from '@nestjs/common';
import { BATCH_SCORE_FLOOR } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import { COMMANDS_REDIS } from './api-redis.providers';
import type { CompletionQueue } from './completion-queues';

/**
 * A place held for a job between admission and its `queue.add`. Held places count as waiting,
 * so requests that arrive together cannot all see a short queue and all get in. One expires by
 * itself (an API instance that died between the two steps leaks nothing for long).
 */
const HOLD_MS = 10_000;

/**
 * KEYS: the queue's wait list, its prioritized set, the held places. ARGV: limit, hold ms, id,
 * the lowest prioritized score of a batch line. Counting and holding in one script is what makes
 * the limit exact under any concurrency; the keys share the queue's hash tag, so it also runs on
 * a cluster. Server time, not the caller's. Batch lines wait below every interactive request and
 * are fed in bounded numbers, so they do not count: a batch never fills the queue for others.
 */
const HOLD_PLACE_LUA = `
local now = redis.call('TIME')
local nowMs = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', nowMs - tonumber(ARGV[2]))
local interactive = redis.call('ZCOUNT', KEYS[2], '-inf', '(' .. ARGV[4])
local waiting = redis.call('LLEN', KEYS[1]) + interactive + redis.call('ZCARD', KEYS[3])
if waiting >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[3], nowMs, ARGV[3])
redis.call('PEXPIRE', KEYS[3], ARGV[2])
return 1
`;

type WithHoldPlace = RedisClient & {
  holdWaitingPlace(wait: string, prioritized: string, held: string, limit: number, holdMs: number, id: string, batchScoreFloor: number): Promise<number>;
};

/** Admission's queue-depth check: decides and holds a place in one atomic step per request. */
@Injectable()
export class WaitingSlots {
  private readonly redis: WithHoldPlace;

  constructor(@Inject(COMMANDS_REDIS) redis: RedisClient) {
    redis.defineCommand('holdWaitingPlace', { numberOfKeys: 3, lua: HOLD_PLACE_LUA });
    this.redis = redis as WithHoldPlace;
  }

  /** True when fewer than `limit` jobs wait (held places included); the place is then held for `completionId`. */
  async hold(queue: CompletionQueue, completionId: string, limit: number): Promise<boolean> {
    const held = await this.redis.holdWaitingPlace(queue.toKey('wait'), queue.toKey('prioritized'), heldKey(queue), limit, HOLD_MS, completionId, BATCH_SCORE_FLOOR);
    return held === 1;
  }

  /** Gives the place up: the job is in the queue now (it counts there), or it never will be. */
  release(queue: CompletionQueue, completionId: string): void {
    this.redis.zrem(heldKey(queue), completionId).catch(() => undefined); // it expires by itself anyway
  }
}

const heldKey = (queue: CompletionQueue): string => queue.toKey('held-places');
