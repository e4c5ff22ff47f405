import { Inject, Injectable } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { aBoolean, aCount, anObject, arrayOf, aString, fields, optional, parseChecked } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import { COMMANDS_REDIS } from '../../redis/api-redis.module';
import { holdLease } from '../common/completion-lease';
import type { ReleaseLease } from '../common/completion-lease';
import { OwnedRecords } from '../common/owned-records';
import { ConversationTurns } from './conversation-turns';
import type { ConversationItem } from './response-items';
import type { ResponseIdentity, ResponseState } from './response-object';

/**
 * Redis keys of the Responses API's stored objects. DO NOT CHANGE THE VALUES once shipped: stored
 * responses would be lost. One hash tag per response keeps its keys in one Cluster slot.
 */
export const storedResponseKeys = (
  id: string,
): { record: string; answer: string; failure: string; log: string; lease: string; cancelled: string; steps: string } => {
  const tag = `{response:${id}}`;
  return {
    record: `${tag}:record`,
    answer: `${tag}:answer`,
    failure: `${tag}:failure`,
    log: `${tag}:events`,
    lease: `${tag}:lease`,
    cancelled: `${tag}:cancelled`,
    steps: `${tag}:loop-steps`,
  };
};

/** Whether a response may still change: its job has not ended (or nobody has recorded that it did). */
export const isOpenStatus = (status: string): boolean => status === 'queued' || status === 'in_progress';

/**
 * Writes a record (ARGV[1]) only while the stored one is still open, keeping its expiry: the first
 * ending wins (a cancel, the creating instance, or whichever instance settles it on read). Returns
 * the record as stored afterwards, or nothing when it is gone.
 */
const END_IF_OPEN_LUA = `
local current = redis.call('GET', KEYS[1])
if not current then return false end
local status = cjson.decode(current).state.status
if status ~= 'queued' and status ~= 'in_progress' then return current end
redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL')
return ARGV[1]
`;

type WithEndIfOpen = RedisClient & { endResponseIfOpen(record: string, json: string): Promise<string | null> };
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
  /** A background response with remote MCP tools: its loop runs on the loops' queue (BackgroundMcpLoops), turn by turn. */
  loop?: boolean;
}

const storedResponseRecord = fields<StoredResponseRecord>({
  owner: aString,
  identity: anObject,
  history: arrayOf(anObject),
  inputStart: aCount,
  state: anObject,
  affinityKey: optional(aString),
  loop: optional(aBoolean),
});

interface StoredItem {
  owner: string;
  item: ConversationItem;
}

/**
 * Responses created with `store` (OpenAI's default), kept in Redis for STORE_TTL_SECONDS and
 * readable from every API instance: the record, one key per item (what `item_reference` finds),
 * and one sorted set per API key that bounds them to STORE_MAX_PER_KEY (OwnedRecords). Only the key that created
 * a response sees it or its items.
 */
@Injectable()
export class StoredResponses {
  private readonly ttlMs: number;
  private readonly redis: WithEndIfOpen;
  private readonly records: OwnedRecords<StoredResponseRecord>;

  constructor(
    private readonly env: ApiEnv,
    @Inject(COMMANDS_REDIS) redis: RedisClient,
    private readonly turns: ConversationTurns,
  ) {
    this.ttlMs = env.STORE_TTL_SECONDS * 1000;
    redis.defineCommand('endResponseIfOpen', { numberOfKeys: 1, lua: END_IF_OPEN_LUA });
    this.redis = redis as WithEndIfOpen;
    this.records = new OwnedRecords(redis, {
      recordKey: (id) => storedResponseKeys(id).record,
      indexKey,
      check: storedResponseRecord,
      what: 'stored response record',
      ttlMs: this.ttlMs,
      maxPerOwner: env.STORE_MAX_PER_KEY,
    });
  }

  /** How long stored objects (and a background job's answer) live. */
  get keepMs(): number {
    return this.ttlMs;
  }

  /**
   * Records a response as it starts (its input items become referenceable). One that is not in
   * the background lives only while this instance follows it: its lease (held first, released by
   * the caller once it has ended) tells every reader whether that is still so.
   */
  async begin(record: StoredResponseRecord): Promise<ReleaseLease> {
    // Sent first on this one connection: no reader finds the record without its lease.
    const lease: Promise<ReleaseLease> = record.identity.settings.background
      ? Promise.resolve(() => undefined)
      : holdLease(this.redis, storedResponseKeys(record.identity.id).lease, this.env.RESUME_GRACE_MS);
    try {
      await Promise.all([
        lease,
        this.records.create(record.identity.id, record.identity.createdAtMs, record),
        this.writeItems(record.owner, record.history.slice(record.inputStart)),
      ]);
    } catch (error) {
      lease.then((release) => release()).catch(() => undefined);
      throw error;
    }
    return lease;
  }

  /**
   * Records how it ended (its output items become referenceable), then drops the key's oldest
   * beyond STORE_MAX_PER_KEY: only now, so a request refused before it ran (the queue full),
   * whose record is deleted, never costs an earlier response its place.
   */
  async end(record: StoredResponseRecord, state: ResponseState, output: ConversationItem[]): Promise<StoredResponseRecord> {
    const ended = { ...record, state };
    await Promise.all([this.records.update(record.identity.id, ended), this.writeItems(record.owner, output)]);
    await this.endTurn(record, state, output);
    await this.keepWithinLimit(record.owner);
    return ended;
  }

  /**
   * Records how an open response ended, unless another ending was recorded first (see
   * END_IF_OPEN_LUA); returns the record as it stands then (undefined once deleted).
   */
  async endIfOpen(record: StoredResponseRecord, state: ResponseState, output: ConversationItem[]): Promise<StoredResponseRecord | undefined> {
    const ended = { ...record, state };
    const json = JSON.stringify(ended);
    const stored = await this.redis.endResponseIfOpen(storedResponseKeys(record.identity.id).record, json);
    if (stored === null) return undefined;
    if (stored !== json) return parseChecked<StoredResponseRecord>(stored, storedResponseRecord, 'stored response record');
    await this.writeItems(record.owner, output);
    await this.endTurn(record, state, output);
    await this.keepWithinLimit(record.owner);
    return ended;
  }

  /** A response on a conversation ends its turn there: its input and output are appended when it completed (or ran out of tokens). */
  private async endTurn(record: StoredResponseRecord, state: ResponseState, output: ConversationItem[]): Promise<void> {
    const conversation = record.identity.settings.conversation;
    if (!conversation) return;
    const kept = state.status === 'completed' || state.status === 'incomplete';
    await this.turns.end(conversation, record.identity.id, kept ? [...record.history.slice(record.inputStart), ...output] : undefined);
  }

  /** The record, only for its owner. */
  find(owner: string, id: string): Promise<StoredResponseRecord | undefined> {
    return this.records.find(owner, id);
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
      this.records.unindex(record.owner, id),
      ...[keys.record, keys.answer, keys.failure, keys.log, keys.lease, keys.cancelled].map((key) => this.redis.unlink(key)),
      ...this.ownItemIds(record).map((itemId) => this.redis.unlink(itemKey(itemId))),
    ]);
  }

  /** The ids of the items this response stored: its input and its output (those of earlier responses stay theirs). */
  private ownItemIds(record: StoredResponseRecord): string[] {
    return [...record.history.slice(record.inputStart), ...(record.state.output as ConversationItem[])].map((item) => item.id);
  }

  private async writeItems(owner: string, items: ConversationItem[]): Promise<void> {
    // One command per item: in a Redis Cluster the items' keys are in different slots.
    await Promise.all(items.map((item) => this.redis.set(itemKey(item.id), JSON.stringify({ owner, item } satisfies StoredItem), 'PX', this.ttlMs)));
  }

  /** Drops the owner's oldest responses beyond STORE_MAX_PER_KEY, with their items. */
  private keepWithinLimit(owner: string): Promise<void> {
    return this.records.keepWithinLimit(owner, async (id) => {
      const record = await this.records.read(id);
      if (record) await this.delete(record);
    });
  }
}
