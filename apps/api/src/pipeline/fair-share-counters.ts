import { Inject, Injectable } from '@nestjs/common';
import { completionQueuePrefix } from '@app/contracts';
import type { ServiceTier } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import { COMMANDS_REDIS } from '../redis/api-redis.module';

/** Weighted tokens per priority level: a tier's band spans 699,050 levels, about 22 million tokens. */
export const FAIR_SHARE_QUANTUM = 32;

/** A tier's counters outlive their last admission this long; a key idle longer starts afresh (lifted anyway). */
const STATE_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * KEYS: the tier's counters (a hash), the queue's prioritized set. ARGV: the key's field, the job's
 * cost, the quantum, the band's first priority, its levels, the lowest and the highest (excluded)
 * prioritized score of the band, the state's TTL.
 *
 * Start-time fair queueing over VTC's counters: a key's counter is the virtual tokens it has been
 * served or has waiting; `v`, the virtual time, is the counter value of the last job started. A
 * job starts at max(its key's counter, v) (a key that was idle is lifted to v, so it cannot bank
 * credit) and adds its cost to its key's counter. Its priority is its start in levels of `quantum`
 * above the band's origin; the origin moves up to `v` when nothing of the band waits, and a start
 * beyond the band is placed at its last level (FIFO there) until it does. Also returns whether
 * the key was under its fair share (its counter at or below `v`: nothing of it waits ahead) with
 * nothing of a higher tier waiting (the bands below `first`).
 */
const ADMIT_LUA = `
local v = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
local origin = tonumber(redis.call('HGET', KEYS[1], 'origin') or '0')
local quantum, first, levels = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
if v - origin > levels * quantum / 4 and redis.call('ZCOUNT', KEYS[2], ARGV[6], '(' .. ARGV[7]) == 0 then
  origin = v
  redis.call('HSET', KEYS[1], 'origin', origin)
end
local counter = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local start = math.max(counter, v)
redis.call('HSET', KEYS[1], ARGV[1], start + tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[1], ARGV[8])
local level = math.max(0, math.min(math.floor((start - origin) / quantum), levels - 1))
local under = counter <= v and redis.call('ZCOUNT', KEYS[2], 0, '(' .. ARGV[6]) == 0
return {first + level, start, under and 1 or 0}
`;

/** KEYS: the tier's counters. ARGV: a started job's start. The virtual time never goes back. */
const STARTED_LUA = `
local v = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
if tonumber(ARGV[1]) > v then redis.call('HSET', KEYS[1], 'v', ARGV[1]) end
return 0
`;

type WithFairShare = RedisClient & {
  fairShareAdmit(
    state: string,
    prioritized: string,
    field: string,
    cost: number,
    quantum: number,
    first: number,
    levels: number,
    low: string,
    high: string,
    ttlMs: number,
  ): Promise<[number, number, number]>;
  fairShareStarted(state: string, start: number): Promise<number>;
};

/** Where a job waits and what it added to its key's counter. */
export interface FairShareSlot {
  priority: number;
  start: number;
  /** Its key's counter was at or below the virtual time (nothing of it waits ahead), and no job of a higher tier waits. */
  underShare: boolean;
}

/**
 * The virtual token counters of one model's tier, in Redis under the model's queue hash tag (one
 * Cluster slot with the queue's prioritized set, which the admission script reads).
 */
@Injectable()
export class FairShareCounters {
  private readonly redis: WithFairShare;

  constructor(@Inject(COMMANDS_REDIS) redis: RedisClient) {
    redis.defineCommand('fairShareAdmit', { numberOfKeys: 2, lua: ADMIT_LUA });
    redis.defineCommand('fairShareStarted', { numberOfKeys: 1, lua: STARTED_LUA });
    this.redis = redis as WithFairShare;
  }

  /** Charges `cost` to the key and places the job in the band that starts at `first`. */
  async admit(model: string, tier: ServiceTier, keyId: string, cost: number, prioritized: string, first: number, levels: number): Promise<FairShareSlot> {
    // Scores as exact decimal strings: Lua would print numbers this large in exponent notation.
    const low = String(first * 2 ** 32);
    const high = String((first + levels) * 2 ** 32);
    const [priority, start, underShare] = await this.redis.fairShareAdmit(
      stateKey(model, tier),
      prioritized,
      field(keyId),
      cost,
      FAIR_SHARE_QUANTUM,
      first,
      levels,
      low,
      high,
      STATE_TTL_MS,
    );
    return { priority, start, underShare: underShare === 1 };
  }

  /** A job of the tier started: the virtual time reaches its start. */
  async started(model: string, tier: ServiceTier, start: number): Promise<void> {
    await this.redis.fairShareStarted(stateKey(model, tier), start);
  }

  /** Adds `delta` (negative: gives back) to the key's counter. */
  async correct(model: string, tier: ServiceTier, keyId: string, delta: number): Promise<void> {
    if (delta === 0) return;
    const state = stateKey(model, tier);
    await Promise.all([this.redis.hincrby(state, field(keyId), delta), this.redis.pexpire(state, STATE_TTL_MS)]);
  }
}

const stateKey = (model: string, tier: ServiceTier): string => `${completionQueuePrefix(model)}:fair-share:${tier}`;
const field = (keyId: string): string => `key:${keyId}`;
