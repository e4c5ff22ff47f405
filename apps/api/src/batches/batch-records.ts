import { Inject, Injectable } from '@nestjs/common';
import {
  aCount,
  anObject,
  anyOf,
  aNumber,
  arrayOf,
  aString,
  fields,
  isCompletionFailure,
  nullable,
  oneOf,
  optional,
  parseChecked,
  recordOf,
  satisfies,
  storedAnswerCheck,
} from '@app/contracts';
import type { CompletionFailure, StoredAnswer } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import { COMMANDS_REDIS } from '../redis/api-redis.module';
import type { OpenAiErrorBody } from '../errors/openai-error';
import { REDRIVE_TURN_KEY, UNFINISHED_BATCHES_KEY, batchKeys, batchesIndexKey, isFinished } from './batch-object';
import type { BatchError, BatchRecord, BatchStatus, BatchStop } from './batch-object';

/**
 * Why a line has no answer: the worker's failure, the service's refusal of its body (what the
 * same request over HTTP would have got), or the batch stopped before the line ran.
 */
export type LineFailure = CompletionFailure | { refused: { status: number; body: OpenAiErrorBody } } | { unrun: BatchStop };

/**
 * KEYS: a batch's answers, its failures. ARGV: the line's index, the failure's JSON, retention ms.
 * A failure is written only where the line has no answer or failure yet, checked and written in
 * one step (one round trip). The coordinator fails only lines whose job has ended or left the
 * queue unrun, and a worker writes its answer before its job ends, so no answer comes later.
 */
const FAIL_LINE_LUA = `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 0 end
local written = redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return written
`;

const BATCH_STATUSES = [
  'validating',
  'failed',
  'in_progress',
  'finalizing',
  'completed',
  'expired',
  'cancelling',
  'cancelled',
] as const satisfies readonly BatchStatus[];
const batchStop = oneOf('cancelled', 'expired');
const time = nullable(aNumber);

/** A batch record as its creator and coordinator write it. */
const batchRecord = fields<BatchRecord>({
  id: aString,
  object: oneOf('batch'),
  endpoint: aString,
  model: optional(aString),
  errors: nullable(
    fields<NonNullable<BatchRecord['errors']>>({
      object: oneOf('list'),
      data: arrayOf(fields<BatchError>({ code: aString, message: aString, param: nullable(aString), line: nullable(aCount) })),
    }),
  ),
  input_file_id: aString,
  completion_window: oneOf('24h'),
  status: oneOf(...BATCH_STATUSES),
  output_file_id: nullable(aString),
  error_file_id: nullable(aString),
  created_at: aNumber,
  in_progress_at: time,
  expires_at: aNumber,
  finalizing_at: time,
  completed_at: time,
  failed_at: time,
  expired_at: time,
  cancelling_at: time,
  cancelled_at: time,
  request_counts: fields<BatchRecord['request_counts']>({ total: aCount, completed: aCount, failed: aCount }),
  usage: optional(anObject),
  metadata: nullable(recordOf(aString)),
  owner: aString,
  fed: optional(fields<NonNullable<BatchRecord['fed']>>({ index: aCount, line: aCount, byte: aCount })),
  stopping: optional(batchStop),
  swept_at: optional(aNumber),
});

/** A line's failure as a worker (CompletionFailure) or the coordinator wrote it. */
const lineFailure = anyOf(
  'a line failure',
  satisfies(isCompletionFailure, 'a completion failure'),
  fields<{ refused: { status: number; body: OpenAiErrorBody } }>({
    refused: fields<{ status: number; body: OpenAiErrorBody }>({ status: aCount, body: anObject }),
  }),
  fields<{ unrun: BatchStop }>({ unrun: batchStop }),
);

type WithFailLine = RedisClient & {
  failBatchLine(answers: string, failures: string, index: number, failure: string, retentionMs: number): Promise<number>;
};

/** A line's outcome, by its index. */
export interface LineOutcome {
  answer?: StoredAnswer;
  failure?: LineFailure;
}

/**
 * Batches in Redis: a record per batch (only its coordinator changes it after creation; a cancel
 * request sets a flag beside it, so no update is lost), the outcomes of its lines (hashes by line
 * index), and each owner's batches by creation time. Everything lives as long as the completion
 * window plus the output files' use: BATCH_RETENTION_SECONDS.
 */
@Injectable()
export class BatchRecords {
  private readonly redis: WithFailLine;

  constructor(@Inject(COMMANDS_REDIS) redis: RedisClient) {
    redis.defineCommand('failBatchLine', { numberOfKeys: 2, lua: FAIL_LINE_LUA });
    this.redis = redis as WithFailLine;
  }

  async create(record: BatchRecord, retentionMs: number): Promise<void> {
    const index = batchesIndexKey(record.owner);
    await Promise.all([
      this.redis.set(batchKeys(record.id).record, JSON.stringify(record), 'PX', retentionMs),
      this.redis.zadd(index, record.created_at * 1000, record.id),
      this.redis.zremrangebyscore(index, '-inf', Date.now() - retentionMs),
      this.redis.pexpire(index, retentionMs),
      this.redis.zadd(UNFINISHED_BATCHES_KEY, record.created_at * 1000, record.id),
    ]);
  }

  /** A batch that never started (its job could not be queued). */
  async remove(record: BatchRecord): Promise<void> {
    await Promise.all([
      this.redis.unlink(batchKeys(record.id).record),
      this.redis.zrem(batchesIndexKey(record.owner), record.id),
      this.redis.zrem(UNFINISHED_BATCHES_KEY, record.id),
    ]);
  }

  /** The batches not yet finished, oldest first (those past their retention are forgotten). */
  async unfinished(retentionMs: number): Promise<string[]> {
    await this.redis.zremrangebyscore(UNFINISHED_BATCHES_KEY, '-inf', Date.now() - retentionMs);
    return this.redis.zrange(UNFINISHED_BATCHES_KEY, '0', '-1');
  }

  /** Whether `holder` is the first to ask in the last `periodMs`: one coordinator looks for lost jobs per period. */
  async claimRedriveTurn(holder: string, periodMs: number): Promise<boolean> {
    return (await this.redis.set(REDRIVE_TURN_KEY, holder, 'PX', periodMs, 'NX')) === 'OK';
  }

  /** Drops a batch from the unfinished ones: it has finished, or its record is gone. */
  async forgetUnfinished(id: string): Promise<void> {
    await this.redis.zrem(UNFINISHED_BATCHES_KEY, id);
  }

  /** The record; with `owner`, only if it is theirs. */
  async find(id: string, owner?: string): Promise<BatchRecord | undefined> {
    const json = await this.redis.get(batchKeys(id).record);
    if (json === null) return undefined;
    const record = parseChecked<BatchRecord>(json, batchRecord, 'batch record');
    return owner === undefined || record.owner === owner ? record : undefined;
  }

  /** Written by the coordinator only; its lifetime stays as created. */
  async save(record: BatchRecord): Promise<void> {
    // XX: a record past its retention is not brought back without its lifetime.
    await this.redis.set(batchKeys(record.id).record, JSON.stringify(record), 'KEEPTTL', 'XX');
    if (isFinished(record.status)) await this.forgetUnfinished(record.id);
  }

  /** The owner's batch ids, newest first, after `after`. */
  async page(owner: string, after: string | undefined, limit: number): Promise<{ ids: string[]; hasMore: boolean }> {
    const index = batchesIndexKey(owner);
    let start = 0;
    if (after !== undefined) {
      const rank = await this.redis.zrevrank(index, after);
      if (rank === null) return { ids: [], hasMore: false };
      start = rank + 1;
    }
    const ids = await this.redis.zrange(index, String(start), String(start + limit), 'REV');
    return { ids: ids.slice(0, limit), hasMore: ids.length > limit };
  }

  /** When a cancel was requested (Unix seconds), or null. */
  async cancelRequestedAt(id: string): Promise<number | null> {
    const at = await this.redis.get(batchKeys(id).cancelRequested);
    return at === null ? null : Number(at);
  }

  async requestCancel(id: string, retentionMs: number): Promise<void> {
    await this.redis.set(batchKeys(id).cancelRequested, String(Math.floor(Date.now() / 1000)), 'PX', retentionMs, 'NX');
  }

  /** How many lines have an answer, and how many have failed. */
  async counts(id: string): Promise<{ answered: number; failed: number }> {
    const keys = batchKeys(id);
    const [answered, failed] = await Promise.all([this.redis.hlen(keys.answers), this.redis.hlen(keys.failures)]);
    return { answered, failed };
  }

  /** The indexes of lines that have an outcome. */
  async finishedLines(id: string): Promise<Set<number>> {
    const keys = batchKeys(id);
    const [answered, failed] = await Promise.all([this.redis.hkeys(keys.answers), this.redis.hkeys(keys.failures)]);
    return new Set([...answered, ...failed].map(Number));
  }

  /** Records a failure unless the line already has an outcome (a worker's answer or failure wins). */
  async fail(id: string, index: number, failure: LineFailure, retentionMs: number): Promise<void> {
    const keys = batchKeys(id);
    await this.redis.failBatchLine(keys.answers, keys.failures, index, JSON.stringify(failure), retentionMs);
  }

  /** The outcomes of these lines, in their order. */
  async outcomes(id: string, indexes: number[]): Promise<LineOutcome[]> {
    if (indexes.length === 0) return [];
    const keys = batchKeys(id);
    const fields = indexes.map(String);
    const [answers, failures] = await Promise.all([this.redis.hmget(keys.answers, ...fields), this.redis.hmget(keys.failures, ...fields)]);
    return indexes.map((index, position) => ({
      ...(answers[position] ? { answer: parseChecked<StoredAnswer>(answers[position], storedAnswerCheck, `batch line ${index} answer`) } : {}),
      ...(failures[position] ? { failure: parseChecked<LineFailure>(failures[position], lineFailure, `batch line ${index} failure`) } : {}),
    }));
  }
}
