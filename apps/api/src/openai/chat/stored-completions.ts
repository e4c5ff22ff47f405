import { Inject, Injectable } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import {
  aBoolean,
  aCount,
  aNumber,
  anObject,
  arrayOf,
  aString,
  fields,
  oneOf,
  optional,
  parseChecked,
  recordOf,
  storedAnswerCheck,
  storedCompletionKeys,
  storedCompletionsIndexKey,
} from '@app/contracts';
import type { StoredAnswer, StoredCompletionRecord } from '@app/contracts';
import { execResults } from '@app/redis';
import type { RedisClient } from '@app/redis';
import type { ChatCompletionStore, EndStoredRequest, StoredRequest } from './chat-completion-store';
import { completionIdTime } from './completion-ids';
import { COMMANDS_REDIS } from '../../redis/api-redis.module';
import type { ListOrder } from '../../http/cursor-query';
import { holdLease } from '../common/completion-lease';
import { OwnedRecords } from '../common/owned-records';

/** The record as written by `begin`; its messages were validated then and are kept as sent. */
const storedCompletionRecord = fields<StoredCompletionRecord>({
  id: aString,
  owner: aString,
  model: aString,
  createdMs: aNumber,
  metadata: recordOf(aString),
  messages: arrayOf(anObject),
  choices: aCount,
  logprobs: aBoolean,
  includeUsage: aBoolean,
  serviceTier: optional(oneOf('priority', 'default', 'flex')),
});

export interface StoredCompletionQuery {
  model?: string;
  metadata: Record<string, string>;
  after?: string;
  limit: number;
  order: ListOrder;
}

/** How many index entries one list step reads while filtering. */
const LIST_BATCH = 100;

/**
 * Completions created with `store: true`, kept in Redis for STORE_TTL_SECONDS: a record per
 * completion (written here when the request is admitted), its answer (written by the worker
 * when it ends, so it is stored even when its client or API instance is gone), and one sorted
 * set per API key that orders them by creation for listing (OwnedRecords). At most
 * STORE_MAX_PER_KEY per key.
 */
@Injectable()
export class StoredCompletions implements ChatCompletionStore {
  private readonly ttlMs: number;
  private readonly records: OwnedRecords<StoredCompletionRecord>;

  constructor(
    private readonly env: ApiEnv,
    @Inject(COMMANDS_REDIS) private readonly redis: RedisClient,
  ) {
    this.ttlMs = env.STORE_TTL_SECONDS * 1000;
    this.records = new OwnedRecords(redis, {
      recordKey: (id) => storedCompletionKeys(id).record,
      indexKey: storedCompletionsIndexKey,
      check: storedCompletionRecord,
      what: 'stored completion record',
      ttlMs: this.ttlMs,
      maxPerOwner: env.STORE_MAX_PER_KEY,
    });
  }

  /**
   * Sets up a `store: true` request before its job is queued: its record (a resume on any
   * instance checks who owns it) and, for a stream, its lease, renewed until `end`. Returns
   * where the job writes its answer and logs its events, and `end`, for when the request is over.
   */
  async begin(record: StoredCompletionRecord, stream: boolean): Promise<StoredRequest> {
    const keys = storedCompletionKeys(record.id);
    await this.records.create(record.id, record.createdMs, record);
    const release = stream ? await holdLease(this.redis, keys.lease, this.env.RESUME_GRACE_MS) : () => undefined;
    const end: EndStoredRequest = ({ queued }) => {
      release();
      // Best effort, off the response's path: a record left over expires with STORE_TTL_SECONDS.
      (queued ? this.records.keepWithinLimit(record.owner, (id) => this.dropKeys(id)) : this.delete(record)).catch(() => undefined);
    };
    return {
      store: { key: keys.answer, ttlMs: this.ttlMs },
      reply: {
        // Its lease (or, answered in the background, nothing) stops it, not this instance's fate.
        stopWhenUnheard: false,
        log: { key: keys.log, keepMs: this.env.RESUME_WINDOW_SECONDS * 1000, maxEvents: this.env.RESUME_MAX_EVENTS },
        ...(stream ? { leaseKey: keys.lease } : {}),
      },
      end,
    };
  }

  /** The record, only for its owner. */
  find(owner: string, id: string): Promise<StoredCompletionRecord | undefined> {
    return this.records.find(owner, id);
  }

  /** The answer, once its job has ended well. */
  async answer(id: string): Promise<StoredAnswer | undefined> {
    const json = await this.redis.get(storedCompletionKeys(id).answer);
    return json === null ? undefined : parseChecked<StoredAnswer>(json, storedAnswerCheck, 'stored answer');
  }

  async updateMetadata(record: StoredCompletionRecord, metadata: Record<string, string>): Promise<StoredCompletionRecord> {
    const updated = { ...record, metadata };
    await this.records.update(record.id, updated);
    return updated;
  }

  async delete(record: StoredCompletionRecord): Promise<void> {
    await Promise.all([this.records.unindex(record.owner, record.id), this.dropKeys(record.id)]);
  }

  /**
   * One page of the owner's finished completions in creation order, after the id `after`,
   * filtered by model and metadata; `hasMore` when another would follow.
   */
  async list(
    owner: string,
    query: StoredCompletionQuery,
  ): Promise<{ items: Array<{ record: StoredCompletionRecord; answer: StoredAnswer }>; hasMore: boolean }> {
    const index = storedCompletionsIndexKey(owner);
    let start = query.after === undefined ? 0 : await this.rankAfter(index, query.after, query.order);
    const items: Array<{ record: StoredCompletionRecord; answer: StoredAnswer }> = [];
    for (;;) {
      const [from, to] = [String(start), String(start + LIST_BATCH - 1)];
      const ids = query.order === 'asc' ? await this.redis.zrange(index, from, to) : await this.redis.zrange(index, from, to, 'REV');
      start += ids.length;
      const found = await Promise.all(ids.map(async (id) => ({ id, record: await this.find(owner, id), answer: await this.answer(id) })));
      for (const { id, record, answer } of found) {
        if (!record) this.redis.zrem(index, id).catch(() => undefined); // expired: its index entry goes too
        if (!record || !answer || !matches(record, query)) continue;
        if (items.length === query.limit) return { items, hasMore: true };
        items.push({ record, answer });
      }
      if (ids.length < LIST_BATCH) return { items, hasMore: false };
    }
  }

  /**
   * Where a page after the cursor `after` starts, as a rank in the listing's order. The cursor's
   * own entry may be gone since the last page (deleted, expired, evicted): its place is then
   * found from the creation time in its id, which was its score.
   */
  private async rankAfter(index: string, after: string, order: ListOrder): Promise<number> {
    const time = completionIdTime(after);
    if (time === undefined) {
      // Not a time-ordered id: only its own entry says where it stands.
      const rank = order === 'asc' ? await this.redis.zrank(index, after) : await this.redis.zrevrank(index, after);
      return rank === null ? Number.MAX_SAFE_INTEGER : rank + 1;
    }
    // The entries before its millisecond, and those of its millisecond up to it (itself, if still
    // there): entries of one score are ordered by id, as the ids of one millisecond are.
    const [min, max] = order === 'asc' ? ['-inf', `(${time}`] : [`(${time}`, '+inf'];
    const [count, sameTime] = execResults(await this.redis.multi().zcount(index, min, max).zrangebyscore(index, time, time).exec()) as [number, string[]];
    return count + sameTime.filter((id) => (order === 'asc' ? id <= after : id >= after)).length;
  }

  private async dropKeys(id: string): Promise<void> {
    const keys = storedCompletionKeys(id);
    await Promise.all([this.redis.unlink(keys.record), this.redis.unlink(keys.answer), this.redis.unlink(keys.log)]);
  }
}

function matches(record: StoredCompletionRecord, query: StoredCompletionQuery): boolean {
  if (query.model !== undefined && record.model !== query.model) return false;
  return Object.entries(query.metadata).every(([key, value]) => record.metadata[key] === value);
}
