import { Inject, Injectable } from '@nestjs/common';
import { affinityMapKey, BATCH_SCORE_FLOOR, workerQueueName } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import { COMMANDS_REDIS } from '../redis/api-redis.module';
import type { CompletionQueue } from './completion-queues';
import { SHARED_QUEUE_WAITING_LUA } from './waiting-limit';

/**
 * KEYS: the affinity map entry, the shared queue's wait list, its prioritized set, its held places.
 * ARGV: the key prefix of the model's worker queues up to the worker id, the lowest prioritized
 * score of a batch line. Returns the worker that served the key last (false: none), the jobs
 * waiting on its own queue, and the jobs waiting on the shared queue as its depth limit counts
 * them (SHARED_QUEUE_WAITING_LUA). All in the model's slot: the worker queues' keys are
 * built here, as BullMQ's own scripts build theirs.
 */
const LOOKUP_LUA = `${SHARED_QUEUE_WAITING_LUA}
local workerId = redis.call('GET', KEYS[1])
local shared = sharedQueueWaiting(KEYS[2], KEYS[3], KEYS[4], ARGV[2])
if not workerId then return {false, 0, shared} end
local own = ARGV[1] .. workerId
return {workerId, redis.call('LLEN', own .. ':wait') + redis.call('ZCARD', own .. ':prioritized'), shared}
`;

type WithAffinityLookup = RedisClient & {
  affinityLookup(
    mapEntry: string,
    wait: string,
    prioritized: string,
    held: string,
    workerQueuePrefix: string,
    batchScoreFloor: number,
  ): Promise<[string | null, number, number]>;
};

/** What placement needs to know about a key, read in one round trip. */
export interface AffinityView {
  /** The worker that served the key last, if its entry has not expired. */
  workerId: string | undefined;
  /** Jobs waiting on that worker's own queue. */
  waitingOnWorker: number;
  /** Jobs waiting on the shared queue, counted as its depth limit counts them. */
  waitingOnShared: number;
}

/**
 * Reads the key → worker map entry and both queues' waiting counts with one script, on one Redis
 * or in the model's Redis Cluster slot (the map entry shares the queues' hash tag for this).
 */
@Injectable()
export class AffinityLookup {
  private readonly redis: WithAffinityLookup;

  constructor(@Inject(COMMANDS_REDIS) redis: RedisClient) {
    redis.defineCommand('affinityLookup', { numberOfKeys: 4, lua: LOOKUP_LUA });
    this.redis = redis as WithAffinityLookup;
  }

  async read(model: string, affinityKey: string, shared: CompletionQueue): Promise<AffinityView> {
    const workerQueuePrefix = `${shared.opts.prefix}:${workerQueueName(model, '')}`;
    const [workerId, waitingOnWorker, waitingOnShared] = await this.redis.affinityLookup(
      affinityMapKey(model, affinityKey),
      shared.toKey('wait'),
      shared.toKey('prioritized'),
      shared.toKey('held-places'),
      workerQueuePrefix,
      BATCH_SCORE_FLOOR,
    );
    return { workerId: workerId ?? undefined, waitingOnWorker, waitingOnShared };
  }
}
