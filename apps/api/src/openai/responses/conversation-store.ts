import { Inject, Injectable } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { aCount, anObject, aString, fields } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import { COMMANDS_REDIS } from '../../redis/api-redis.module';
import type { ListOrder } from '../../http/cursor-query';
import { OwnedRecords } from '../common/owned-records';
import type { ConversationItem } from './response-items';

/**
 * Redis keys of one conversation. DO NOT CHANGE THE VALUES once shipped: stored conversations
 * would be lost. One hash tag per conversation keeps its keys in one Cluster slot, so that the
 * scripts below touch them atomically.
 */
export const conversationKeys = (id: string): { record: string; items: string; order: string; next: string; lock: string } => {
  const tag = `{conversation:${id}}`;
  return { record: `${tag}:record`, items: `${tag}:items`, order: `${tag}:order`, next: `${tag}:next`, lock: `${tag}:lock` };
};

const indexKey = (owner: string): string => `{conversations:${owner}}:by-created`;

/** A conversation as stored: who owns it, when it was made, its metadata (its items live beside it). */
export interface ConversationRecord {
  owner: string;
  id: string;
  createdAtMs: number;
  metadata: Record<string, string>;
}

const conversationRecord = fields<ConversationRecord>({ owner: aString, id: aString, createdAtMs: aCount, metadata: anObject });

/** How an append asks: `client` (the items routes) refuses an id already there and a conversation past its bound; `turn` (a response's end) skips ids already there. */
export type AppendMode = 'client' | 'turn';

/** Why an append wrote nothing. */
export type AppendRefusal = { refused: 'gone' } | { refused: 'full'; count: number } | { refused: 'duplicate'; itemId: string };

/**
 * Appends items (ARGV[4..]: id, json pairs) in one step, so that two appends never interleave
 * their items, and gives back the conversation's lock (KEYS[5]) when its holder is ARGV[3]: a
 * response's turn frees the conversation in the same step that writes it, on whichever instance
 * records its end. Positions come from a counter, so a deleted item leaves a gap, never a reused
 * place. Every key expires with the record (the conversation lives STORE_TTL_SECONDS from its
 * creation: an append does not extend it). Returns {'ok'}, {'gone'}, {'full', count} or
 * {'duplicate', id}.
 */
const APPEND_LUA = `
if ARGV[3] ~= '' and redis.call('GET', KEYS[5]) == ARGV[3] then redis.call('DEL', KEYS[5]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then return {'gone'} end
local mode, bound = ARGV[1], tonumber(ARGV[2])
local ids, jsons = {}, {}
for i = 4, #ARGV, 2 do
  local id = ARGV[i]
  if redis.call('HEXISTS', KEYS[2], id) == 1 then
    if mode == 'client' then return {'duplicate', id} end
  else
    table.insert(ids, id)
    table.insert(jsons, ARGV[i + 1])
  end
end
local count = redis.call('ZCARD', KEYS[3])
if mode == 'client' and count + #ids > bound then return {'full', tostring(count)} end
if #ids == 0 then return {'ok'} end
local last = redis.call('INCRBY', KEYS[4], #ids)
for i = 1, #ids do
  redis.call('ZADD', KEYS[3], last - #ids + i, ids[i])
  redis.call('HSET', KEYS[2], ids[i], jsons[i])
end
for k = 2, 4 do redis.call('PEXPIRE', KEYS[k], ttl) end
return {'ok'}
`;

/** Removes one item; returns 1 when it was there. */
const REMOVE_LUA = `
redis.call('ZREM', KEYS[2], ARGV[1])
return redis.call('HDEL', KEYS[1], ARGV[1])
`;

type WithScripts = RedisClient & {
  appendConversationItems(record: string, items: string, order: string, next: string, lock: string, ...args: string[]): Promise<string[]>;
  removeConversationItem(items: string, order: string, itemId: string): Promise<number>;
};

/** One page of a conversation's items, and whether more follow. */
export interface ItemPage {
  items: ConversationItem[];
  hasMore: boolean;
}

/**
 * Conversations (OpenAI's Conversations API) in Redis, readable on every API instance: the
 * record (OwnedRecords: one owner, STORE_TTL_SECONDS, STORE_MAX_PER_KEY per key), its items in a
 * hash by id and their order in a sorted set by position. Only the owner finds a conversation.
 */
@Injectable()
export class ConversationStore {
  private readonly redis: WithScripts;
  private readonly records: OwnedRecords<ConversationRecord>;

  constructor(env: ApiEnv, @Inject(COMMANDS_REDIS) redis: RedisClient) {
    redis.defineCommand('appendConversationItems', { numberOfKeys: 5, lua: APPEND_LUA });
    redis.defineCommand('removeConversationItem', { numberOfKeys: 2, lua: REMOVE_LUA });
    this.redis = redis as WithScripts;
    this.records = new OwnedRecords(redis, {
      recordKey: (id) => conversationKeys(id).record,
      indexKey,
      check: conversationRecord,
      what: 'stored conversation record',
      ttlMs: env.STORE_TTL_SECONDS * 1000,
      maxPerOwner: env.STORE_MAX_PER_KEY,
    });
  }

  /** Stores a new conversation, then drops the owner's oldest beyond STORE_MAX_PER_KEY. */
  async create(record: ConversationRecord): Promise<void> {
    await this.records.create(record.id, record.createdAtMs, record);
    await this.records.keepWithinLimit(record.owner, async (id) => {
      const dropped = await this.records.read(id);
      if (dropped) await this.delete(dropped);
    });
  }

  /** The conversation, only for its owner. */
  find(owner: string, id: string): Promise<ConversationRecord | undefined> {
    return this.records.find(owner, id);
  }

  async updateMetadata(record: ConversationRecord, metadata: Record<string, string>): Promise<ConversationRecord> {
    const updated = { ...record, metadata };
    await this.records.update(record.id, updated);
    return updated;
  }

  async delete(record: ConversationRecord): Promise<void> {
    const keys = conversationKeys(record.id);
    await Promise.all([
      this.records.unindex(record.owner, record.id),
      ...[keys.record, keys.items, keys.order, keys.next].map((key) => this.redis.unlink(key)),
    ]);
  }

  /**
   * Appends items after the last, all or none (see APPEND_LUA); undefined when they were written.
   * `lockHolder`: the response whose turn this is, whose lock on the conversation it gives back.
   */
  async append(id: string, items: ConversationItem[], mode: AppendMode, bound: number, lockHolder = ''): Promise<AppendRefusal | undefined> {
    const keys = conversationKeys(id);
    const pairs = items.flatMap((item) => [item.id, JSON.stringify(item)]);
    const [outcome, detail] = await this.redis.appendConversationItems(
      keys.record,
      keys.items,
      keys.order,
      keys.next,
      keys.lock,
      mode,
      String(bound),
      lockHolder,
      ...pairs,
    );
    if (outcome === 'ok') return undefined;
    if (outcome === 'full') return { refused: 'full', count: Number(detail) };
    if (outcome === 'duplicate') return { refused: 'duplicate', itemId: detail };
    return { refused: 'gone' };
  }

  /** Every item, oldest first: what a response on this conversation is given before its input. */
  async allItems(id: string): Promise<ConversationItem[]> {
    const ids = await this.redis.zrange(conversationKeys(id).order, '0', '-1');
    return this.itemsById(id, ids);
  }

  /** A page of items after the item `after` (undefined when `after` is not in the conversation). */
  async page(id: string, order: ListOrder, limit: number, after?: string): Promise<ItemPage | undefined> {
    const key = conversationKeys(id).order;
    let ids: string[];
    if (after === undefined) {
      ids = order === 'asc' ? await this.redis.zrange(key, '0', String(limit)) : await this.redis.zrevrange(key, 0, limit);
    } else {
      const position = await this.redis.zscore(key, after);
      if (position === null) return undefined;
      ids =
        order === 'asc'
          ? await this.redis.zrangebyscore(key, `(${position}`, '+inf', 'LIMIT', 0, limit + 1)
          : await this.redis.zrevrangebyscore(key, `(${position}`, '-inf', 'LIMIT', 0, limit + 1);
    }
    const items = await this.itemsById(id, ids.slice(0, limit));
    return { items, hasMore: ids.length > limit };
  }

  async item(id: string, itemId: string): Promise<ConversationItem | undefined> {
    const json = await this.redis.hget(conversationKeys(id).items, itemId);
    return json === null ? undefined : (JSON.parse(json) as ConversationItem);
  }

  /** Removes an item; false when it was not there. */
  async removeItem(id: string, itemId: string): Promise<boolean> {
    const keys = conversationKeys(id);
    return (await this.redis.removeConversationItem(keys.items, keys.order, itemId)) === 1;
  }

  /** The items of these ids, in their order; one removed meanwhile is left out. */
  private async itemsById(id: string, ids: string[]): Promise<ConversationItem[]> {
    if (ids.length === 0) return [];
    const jsons = await this.redis.hmget(conversationKeys(id).items, ...ids);
    return jsons.filter((json): json is string => json !== null).map((json) => JSON.parse(json) as ConversationItem);
  }
}
