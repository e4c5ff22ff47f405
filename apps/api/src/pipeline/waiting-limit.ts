import { Inject, Injectable } from '@nestjs/common';
import { BATCH_SCORE_FLOOR, expressQueueName, workerQueueName } from '@app/contracts';
import type { CompletionJobData } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import type { JobsOptions } from 'bullmq';
import { OpenAiError } from '../errors/openai-error';
import { ModelRegistry } from '../models/model-registry';
import { COMMANDS_REDIS } from '../redis/api-redis.module';
import type { CompletionQueue } from './completion-queues';

/** How long a held place counts at most (an API instance that died holding one leaks nothing for long). */
const HOLD_MS = 10_000;

/** How long after a model's line was found full its requests count it before any other work (stillFull). */
const FULL_LINE_WATCH_MS = 1000;

/**
 * The jobs waiting on a model's shared queue as the depth limit counts them, for every script that
 * reads that depth: the wait list, the prioritized jobs above the batch lines' floor (batch lines
 * are fed in bounded numbers and never fill the queue for others), and the places held for jobs on
 * their way (each held by its job's key); a held place whose job is in a queue already (added, its
 * settle not yet run) counts once, as that job.
 */
export const SHARED_QUEUE_WAITING_LUA = `
local function sharedQueueWaiting(wait, prioritized, held, batchScoreFloor)
  local onTheirWay = 0
  for _, jobKey in ipairs(redis.call('ZRANGE', held, 0, -1)) do
    if redis.call('EXISTS', jobKey) == 0 then onTheirWay = onTheirWay + 1 end
  end
  return redis.call('LLEN', wait) + redis.call('ZCOUNT', prioritized, '-inf', '(' .. batchScoreFloor) + onTheirWay
end
`;

/**
 * Every job of the model that waits, wherever it waits: the shared queue (above), the live
 * workers' own queues (prefix-cache affinity) and the express lane, and the jobs a worker has taken
 * but not started: a worker's consumers may take more jobs than it has sequences, and those wait
 * in its slot gate, active in BullMQ. The queues' active jobs beyond the live workers' sequences
 * are those. Keys are built from the queues' key prefixes, as BullMQ's own scripts build theirs
 * (all in the model's cluster slot).
 */
const MODEL_WAITING_LUA = `${SHARED_QUEUE_WAITING_LUA}
local function modelWaiting(sharedKey, held, batchScoreFloor, workerQueuePrefix, expressKey, slots, workerIds)
  local waiting = sharedQueueWaiting(sharedKey .. 'wait', sharedKey .. 'prioritized', held, batchScoreFloor)
  waiting = waiting + redis.call('LLEN', expressKey .. 'wait') + redis.call('ZCARD', expressKey .. 'prioritized')
  local active = redis.call('LLEN', sharedKey .. 'active')
  for _, workerId in ipairs(workerIds) do
    local own = workerQueuePrefix .. workerId .. ':'
    waiting = waiting + redis.call('LLEN', own .. 'wait') + redis.call('ZCARD', own .. 'prioritized')
    active = active + redis.call('LLEN', own .. 'active')
  end
  return waiting + math.max(0, active - slots)
end
`;

/**
 * Both scripts' count of the line: drops the held places past `holdMs` (server time, not the
 * caller's), then counts the model's waiting jobs (MODEL_WAITING_LUA) from the ModelLine that
 * starts at ARGV[first]; answers that count and the time in ms.
 */
const COUNT_LINE_LUA = `${MODEL_WAITING_LUA}
local function countLine(held, holdMs, first)
  local now = redis.call('TIME')
  local nowMs = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
  redis.call('ZREMRANGEBYSCORE', held, '-inf', nowMs - holdMs)
  local workerIds = {}
  for index = first + 5, #ARGV do workerIds[#workerIds + 1] = ARGV[index] end
  return modelWaiting(ARGV[first + 1], held, ARGV[first], ARGV[first + 2], ARGV[first + 3], tonumber(ARGV[first + 4]), workerIds), nowMs
end
`;

/**
 * KEYS: the shared queue's wait list, its prioritized set, the held places, the new job's key (in
 * the queue it goes to). ARGV: the limit, hold ms, the lowest prioritized score of a batch line,
 * the shared queue's key prefix, the key prefix of the model's worker queues up to the worker id,
 * the express lane's key prefix, the live workers' sequences together, then their ids. Counts the
 * line (COUNT_LINE_LUA). Below the limit it holds a place; at the limit it takes the job's key
 * instead, for BullMQ ignores an add whose job id exists. Run again (ioredis resends what went
 * unanswered before a reconnect), it never marks a job that is in, and one it refused stays refused.
 */
const HOLD_OR_REFUSE_LUA = `${COUNT_LINE_LUA}
if redis.call('EXISTS', KEYS[4]) == 1 then
  if redis.call('HEXISTS', KEYS[4], 'refused') == 1 then return 0 end
  return 1
end
local waiting, nowMs = countLine(KEYS[3], tonumber(ARGV[2]), 3)
if waiting >= tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[4], 'refused', 'queue_full')
  redis.call('PEXPIRE', KEYS[4], ARGV[2])
  return 0
end
redis.call('ZADD', KEYS[3], nowMs, KEYS[4])
redis.call('PEXPIRE', KEYS[3], ARGV[2])
return 1
`;

/**
 * KEYS: the held places. ARGV: hold ms, then as HOLD_OR_REFUSE_LUA's from the batch lines' floor
 * on (its ARGV[3] onwards). Counts the line as the hold does (COUNT_LINE_LUA), so a dead
 * instance's places never keep the line full here longer than there.
 */
const COUNT_WAITING_LUA = `${COUNT_LINE_LUA}
return (countLine(KEYS[1], tonumber(ARGV[1]), 2))
`;

/** KEYS: the held places, the job's key. Gives the place up, or removes a refusal's mark. */
const SETTLE_LUA = `
redis.call('ZREM', KEYS[1], KEYS[2])
if redis.call('HGET', KEYS[2], 'refused') then redis.call('DEL', KEYS[2]) end
return 0
`;

/** What every count of a model's line takes after its own keys: where the model's queues' keys start, the live workers' sequences together and their ids. */
type ModelLine = [batchScoreFloor: number, sharedKey: string, workerQueuePrefix: string, expressKey: string, slots: number, ...workerIds: string[]];

type WithWaitingLimit = RedisClient & {
  holdPlaceOrRefuse(wait: string, prioritized: string, held: string, job: string, limit: number, holdMs: number, ...line: ModelLine): Promise<number>;
  countWaiting(held: string, holdMs: number, ...line: ModelLine): Promise<number>;
  settlePlace(held: string, job: string): Promise<number>;
};

const QUEUE_FULL = 'queue_full';

/** The answer to a request for a model whose waiting line is full: nothing of it was queued. */
export const queueFull = (model: string): OpenAiError =>
  OpenAiError.unavailable(`Too many requests are waiting for ${model}. Please retry shortly.`, QUEUE_FULL, 2);

/** The job was refused because its model's line was full: nothing of it was queued. */
export const isQueueFull = (error: unknown): boolean => error instanceof OpenAiError && error.code === QUEUE_FULL;

/**
 * The model's waiting limit (MAX_WAITING_JOBS), applied as a job is added to any of its queues and
 * without a round trip of its own: one script holds a place (or refuses), and BullMQ's add follows
 * it on the same connection at once. Held places count as waiting, so requests that arrive
 * together, from any API instance, never put more than the limit in the model's queues. The keys
 * share the queues' hash tag, so it also runs on a cluster.
 */
@Injectable()
export class WaitingLimit {
  private readonly redis: WithWaitingLimit;
  /** When each model's line was last found full here (epoch ms). */
  private readonly foundFull = new Map<string, number>();

  constructor(
    @Inject(COMMANDS_REDIS) redis: RedisClient,
    private readonly models: ModelRegistry,
  ) {
    redis.defineCommand('holdPlaceOrRefuse', { numberOfKeys: 4, lua: HOLD_OR_REFUSE_LUA });
    redis.defineCommand('countWaiting', { numberOfKeys: 1, lua: COUNT_WAITING_LUA });
    redis.defineCommand('settlePlace', { numberOfKeys: 2, lua: SETTLE_LUA });
    this.redis = redis as WithWaitingLimit;
  }

  /**
   * Adds the job to `target` (the model's shared queue, a worker's own queue or the express lane)
   * unless `limit` jobs of its model wait already (false: nothing was added).
   */
  async add(
    target: CompletionQueue,
    shared: CompletionQueue,
    name: string,
    data: CompletionJobData,
    options: JobsOptions & { jobId: string },
    limit: number,
  ): Promise<boolean> {
    const { jobId } = options;
    const [held, job] = [shared.toKey('held-places'), target.toKey(jobId)];
    // Not awaited: Redis runs commands of one connection in order, so the add comes after it.
    const place = this.redis.holdPlaceOrRefuse(
      shared.toKey('wait'),
      shared.toKey('prioritized'),
      held,
      job,
      limit,
      HOLD_MS,
      ...this.modelLine(shared, data.model),
    );
    const added = target.add(name, data, options);
    try {
      const [placed] = await Promise.all([place, added]);
      if (placed !== 1) this.foundFull.set(data.model, Date.now());
      return placed === 1;
    } finally {
      // The job counts itself now, if it is in the queue at all.
      this.redis.settlePlace(held, job).catch(() => undefined); // both expire by themselves anyway
    }
  }

  /**
   * Whether the model's line is still full, asked for a request before anything is done for it:
   * false at once unless its line was found full here within FULL_LINE_WATCH_MS (an add refused,
   * or this count); then one count of the line answers, as the add would count it.
   */
  async stillFull(shared: CompletionQueue, model: string, limit: number): Promise<boolean> {
    if (Date.now() - (this.foundFull.get(model) ?? 0) > FULL_LINE_WATCH_MS) return false;
    const full = (await this.redis.countWaiting(shared.toKey('held-places'), HOLD_MS, ...this.modelLine(shared, model))) >= limit;
    if (full) this.foundFull.set(model, Date.now());
    else this.foundFull.delete(model);
    return full;
  }

  /** The model's line as its counts take it (ModelLine). */
  private modelLine(shared: CompletionQueue, model: string): ModelLine {
    const workers = this.models.liveWorkers(model);
    const slots = workers.reduce((sum, worker) => sum + worker.slots, 0);
    return [
      BATCH_SCORE_FLOOR,
      shared.toKey(''),
      `${shared.opts.prefix}:${workerQueueName(model, '')}`,
      `${shared.opts.prefix}:${expressQueueName(model)}:`,
      slots,
      ...workers.map((worker) => worker.workerId),
    ];
  }
}
