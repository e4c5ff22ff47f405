import { newTimeOrderedId } from '../http/time-ordered-ids';

export type BatchStatus = 'validating' | 'failed' | 'in_progress' | 'finalizing' | 'completed' | 'expired' | 'cancelling' | 'cancelled';

/** How a batch that stops early ends: the status it ends in, and the error code of its unrun lines. */
export type BatchStop = 'cancelled' | 'expired';

export interface BatchError {
  code: string;
  message: string;
  param: string | null;
  line: number | null;
}

export interface BatchUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

/** OpenAI's `batch` object, as the client sees it. */
export interface BatchObject {
  id: string;
  object: 'batch';
  endpoint: string;
  model?: string;
  errors: { object: 'list'; data: BatchError[] } | null;
  input_file_id: string;
  completion_window: '24h';
  status: BatchStatus;
  output_file_id: string | null;
  error_file_id: string | null;
  created_at: number;
  in_progress_at: number | null;
  expires_at: number;
  finalizing_at: number | null;
  completed_at: number | null;
  failed_at: number | null;
  expired_at: number | null;
  cancelling_at: number | null;
  cancelled_at: number | null;
  request_counts: { total: number; completed: number; failed: number };
  usage?: BatchUsage;
  metadata: Record<string, string> | null;
}

/** What is stored: the object, whose it is, and how far its coordinator has got. */
export interface BatchRecord extends BatchObject {
  owner: string;
  /** Where feeding its lines to the queue has got: the next line's index, and the file position after the last line fed. */
  fed?: { index: number; line: number; byte: number };
  /** Set once the coordinator has begun to stop the batch's lines (cancelled or past its window). */
  stopping?: BatchStop;
  /** When the coordinator last looked for lines lost without an outcome (Unix ms). */
  swept_at?: number;
}

/** `batch_` and 24 characters, in creation order (see newTimeOrderedId): same-second batches list as created. */
export const newBatchId = (now: number): string => newTimeOrderedId('batch_', now);

/** A line's job id, which is also its completion id (`request_id` and the body's `id` in the output). */
export const lineCompletionId = (batchId: string, index: number): string => `chatcmpl-${batchId.slice('batch_'.length)}-${index}`;

/**
 * A batch's keys share one hash tag (one cluster slot): its record, the answers and failures of
 * its lines (hashes by line index, written by workers and by the coordinator), and the flag a
 * cancel request sets. Each owner's batches are listed from a sorted set by creation time.
 */
export function batchKeys(batchId: string): { record: string; answers: string; failures: string; cancelRequested: string } {
  const tag = `{batch:${batchId}}`;
  return { record: `${tag}:record`, answers: `${tag}:answers`, failures: `${tag}:failures`, cancelRequested: `${tag}:cancel-requested` };
}

export const batchesIndexKey = (owner: string): string => `{batches:${owner}}:by-created`;

/** Every batch not yet finished, by creation time: what the coordinators take up again if its job is lost. */
export const UNFINISHED_BATCHES_KEY = '{batches}:unfinished';

/** Held by the coordinator whose turn it is to look for lost batch jobs. */
export const REDRIVE_TURN_KEY = '{batches}:redrive-turn';

/** Whether a batch in this status is over: nothing more will change it. */
export const isFinished = (status: BatchStatus): boolean => status === 'failed' || status === 'completed' || status === 'expired' || status === 'cancelled';

const INTERNAL_FIELDS: ReadonlySet<string> = new Set(['owner', 'fed', 'stopping', 'swept_at'] satisfies Array<Exclude<keyof BatchRecord, keyof BatchObject>>);

/** The object a client sees: a cancel request shows at once as `cancelling`, until the coordinator ends the batch. */
export function toBatchObject(record: BatchRecord, cancelRequestedAt: number | null): BatchObject {
  const batch = Object.fromEntries(Object.entries(record).filter(([key]) => !INTERNAL_FIELDS.has(key))) as unknown as BatchObject;
  if (cancelRequestedAt === null || isFinished(batch.status) || batch.status === 'finalizing') return batch;
  return { ...batch, status: 'cancelling', cancelling_at: batch.cancelling_at ?? cancelRequestedAt };
}
