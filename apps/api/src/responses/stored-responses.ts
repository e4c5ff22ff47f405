import { Inject, Injectable } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import type { RedisClient } from '@app/redis';
import { COMMANDS_REDIS } from '../completions/api-redis.providers';
import type { ConversationItem } from './response-items';
import type { ResponseIdentity, ResponseState } from './response-object';

/**
 * Redis keys of the Responses API's stored objects. DO NOT CHANGE THE VALUES once shipped: stored
 * responses would be lost. One hash tag per response keeps its keys in one Cluster slot.
 */
export const storedResponseKeys = (id: string): { record: string; answer: string; log: string; lease: string } => {
  const tag = `{response:${id}}`;
  return { record: `${tag}:record`, answer: `${tag}:answer`, log: `${tag}:events`, lease: `${tag}:lease` };
};
const itemKey = (itemId: string): string => `{response-item:${itemId}}`;
const indexKey = (owner: string): string => `{stored-responses:${owner}}:by-created`;

/** A stored response: who made it, what it was asked (its conversation up to its input), and how it stands. */
export interface StoredResponseRecord {
  owner: string;
  identity: ResponseIdentity;
  /** The conversation before this response's input (from `previous_response_id`), then its input. */
  history: ConversationItem[];
  /** Where this response's own input starts in `history` (what `input_items` lists). */
  inputStart: number;
  /** The latest state: `in_progress` (or `queued`) until it ends. */
  state: ResponseState;
  /** The affinity key its job was given (its own `prompt_cache_key`, or its chain's): a response continuing it keeps it. */
  affinityKey?: string;
}

interface StoredItem {
  owner: string;
  item: ConversationItem;
}

/**
 * Responses created with `store` (OpenAI's default), kept in Redis for STORE_TTL_SECONDS and
 * readable from every API instance: the record, one key per item (what `item_reference` finds),
 * and one sorted set per API key that bounds them to STORE_MAX_PER_KEY. Only the key that created
 * a response sees it or its items.
 */
@Injectable()
export class StoredResponses {
  private readonly ttlMs: number;

  constructor(
    private readonly env: ApiEnv,
    @Inject(COMMANDS_REDIS) private readonly redis: RedisClient,
  ) {
    this.ttlMs = env.STORE_TTL_SECONDS * 1000;
  }

  /** Records a response as it starts (its input items become referenceable). */
  async begin(record: StoredResponseRecord): Promise<void> {
    const index = indexKey(record.owner);
    await Promise.all([
      this.writeRecord(record),
      this.writeItems(record.owner, record.history.slice(record.inputStart)),
      this.redis.zadd(index, record.identity.createdAtMs, record.identity.id),
      this.redis.zremrangebyscore(index, '-inf', Date.now() - this.ttlMs),
      this.redis.pexpire(index, this.ttlMs),
    ]);
  }

  /**
   * Records how it ended (its output items become referenceable), then drops the key's oldest
   * beyond STORE_MAX_PER_KEY: only now, so a request refused before it ran (the queue full),
   * whose record is deleted, never costs an earlier response its place.
   */
  async end(record: StoredResponseRecord, state: ResponseState, output: ConversationItem[]): Promise<StoredResponseRecord> {
    const ended = { ...record, state };
    await Promise.all([this.writeRecord(ended, true), this.writeItems(record.owner, output)]);
    await this.keepWithinLimit(record.owner);
    return ended;
  }

  /** The record, only for its owner. */
  async find(owner: string, id: string): Promise<StoredResponseRecord | undefined> {
    const json = await this.redis.get(storedResponseKeys(id).record);
    if (json === null) return undefined;
    const record = JSON.parse(json) as StoredResponseRecord;
    return record.owner === owner ? record : undefined;
  }

  /** A stored item by id, only for the key that stored it. */
  async findItem(owner: string, itemId: string): Promise<ConversationItem | undefined> {
    const json = await this.redis.get(itemKey(itemId));
    if (json === null) return undefined;
    const stored = JSON.parse(json) as StoredItem;
    return stored.owner === owner ? stored.item : undefined;
  }

  async delete(record: StoredResponseRecord): Promise<void> {
    const { id } = record.identity;
    const keys = storedResponseKeys(id);
    await Promise.all([
      this.redis.zrem(indexKey(record.owner), id),
      ...[keys.record, keys.answer, keys.log, keys.lease].map((key) => this.redis.unlink(key)),
      ...this.ownItemIds(record).map((itemId) => this.redis.unlink(itemKey(itemId))),
    ]);
  }

  /** The ids of the items this response stored: its input and its output (those of earlier responses stay theirs). */
  private ownItemIds(record: StoredResponseRecord): string[] {
    return [...record.history.slice(record.inputStart), ...(record.state.output as ConversationItem[])].map((item) => item.id);
  }

  /** `onlyIfPresent`: a record deleted (or expired) meanwhile is not brought back. */
  private async writeRecord(record: StoredResponseRecord, onlyIfPresent = false): Promise<void> {
    const key = storedResponseKeys(record.identity.id).record;
    const json = JSON.stringify(record);
    if (onlyIfPresent) await this.redis.set(key, json, 'KEEPTTL', 'XX');
    else await this.redis.set(key, json, 'PX', this.ttlMs);
  }

  private async writeItems(owner: string, items: ConversationItem[]): Promise<void> {
    // One command per item: in a Redis Cluster the items' keys are in different slots.
    await Promise.all(items.map((item) => this.redis.set(itemKey(item.id), JSON.stringify({ owner, item } satisfies StoredItem), 'PX', this.ttlMs)));
  }

  /** Drops the owner's oldest responses beyond STORE_MAX_PER_KEY. */
  private async keepWithinLimit(owner: string): Promise<void> {
    const index = indexKey(owner);
    const excess = (await this.redis.zcard(index)) - this.env.STORE_MAX_PER_KEY;
    if (excess <= 0) return;
    const dropped = await this.redis.zpopmin(index, excess);
    const ids = dropped.filter((_, position) => position % 2 === 0);
    await Promise.all(
      ids.map(async (id) => {
        const json = await this.redis.get(storedResponseKeys(id).record);
        if (json !== null) await this.delete(JSON.parse(json) as StoredResponseRecord);
      }),
    );
  }
}
