import { parseChecked } from '@app/contracts';
import type { Check } from '@app/contracts';
import type { RedisClient } from '@app/redis';

/** Where a kind of owned record lives, how long, how many per owner, and how a read is checked. */
export interface OwnedRecordsOptions {
  /** The record's key, from its id. */
  recordKey(id: string): string;
  /** The owner's sorted set of record ids, scored by creation time (what bounds and lists them). */
  indexKey(owner: string): string;
  /** A stored record's shape, checked on every read: one of another shape is an error, not a guess. */
  check: Check;
  /** Names the record in the error of a read that fails its check. */
  what: string;
  ttlMs: number;
  maxPerOwner: number;
}

/**
 * Records that belong to one API key and live for STORE_TTL_SECONDS, STORE_MAX_PER_KEY at the
 * most per key: stored chat completions and stored responses alike. Only its owner reads a
 * record; for anyone else it does not exist. Each caller keeps its own keys beside the record
 * (answers, logs, items) and deletes them with it.
 */
export class OwnedRecords<T extends { owner: string }> {
  constructor(
    private readonly redis: RedisClient,
    private readonly options: OwnedRecordsOptions,
  ) {}

  /** Writes a new record, expiring with the store, and indexes it by its creation time. */
  async create(id: string, createdMs: number, record: T): Promise<void> {
    const { ttlMs } = this.options;
    const index = this.options.indexKey(record.owner);
    await Promise.all([
      this.redis.set(this.options.recordKey(id), JSON.stringify(record), 'PX', ttlMs),
      this.redis.zadd(index, createdMs, id),
      this.redis.zremrangebyscore(index, '-inf', Date.now() - ttlMs),
      this.redis.pexpire(index, ttlMs),
    ]);
  }

  /**
   * Rewrites a record. KEEPTTL: an update does not extend how long it is stored; XX: a record
   * that expired (or was deleted) meanwhile is not brought back without its lifetime.
   */
  async update(id: string, record: T): Promise<void> {
    await this.redis.set(this.options.recordKey(id), JSON.stringify(record), 'KEEPTTL', 'XX');
  }

  /** The record, only for its owner. */
  async find(owner: string, id: string): Promise<T | undefined> {
    const record = await this.read(id);
    return record?.owner === owner ? record : undefined;
  }

  /** The record whoever owns it: for the store's own upkeep, never for a client. */
  async read(id: string): Promise<T | undefined> {
    const json = await this.redis.get(this.options.recordKey(id));
    return json === null ? undefined : parseChecked<T>(json, this.options.check, this.options.what);
  }

  /** Takes a record out of its owner's index (its keys are the caller's to unlink). */
  async unindex(owner: string, id: string): Promise<void> {
    await this.redis.zrem(this.options.indexKey(owner), id);
  }

  /**
   * Drops the owner's oldest records beyond the bound, each through `drop` (which unlinks its
   * keys). Run once a request's job was queued, not when its record is written: a request
   * refused then (the queue full) must not cost an earlier record its place.
   */
  async keepWithinLimit(owner: string, drop: (id: string) => Promise<void>): Promise<void> {
    const index = this.options.indexKey(owner);
    const excess = (await this.redis.zcard(index)) - this.options.maxPerOwner;
    if (excess <= 0) return;
    const popped = await this.redis.zpopmin(index, excess);
    const ids = popped.filter((_, position) => position % 2 === 0);
    await Promise.all(ids.map(drop));
  }
}
