import { isFinishReason } from './completion-job';
import type { CompletionUsage, FinishReason } from './completion-job';
import { isOutputPart } from './output-parts';
import type { OutputPart } from './output-parts';
import { isCount, isRecord } from './value-guards';

/**
 * Events a worker publishes to a completion's reply channel. Every event names its completion
 * (a channel may carry many), the attempt that produced it (a retried job starts a new attempt)
 * and a sequence number that starts at 0 with each attempt's `started` event, so a subscriber
 * can detect a gap, a duplicate or a stale attempt instead of silently delivering a wrong answer.
 * One sequence per attempt orders the parts of every choice, which is all a gap check needs.
 */
export interface EventEnvelope {
  completionId: string;
  attempt: number;
  seq: number;
}

export interface StartedEvent extends EventEnvelope {
  type: 'started';
  workerId: string;
}

/** Output parts in the order the engine wrote them, batched by the publisher. */
export interface OutputEvent extends EventEnvelope {
  type: 'output';
  parts: OutputPart[];
}

/** Sent while the engine works without producing output (long prefill), to prove liveness. */
export interface HeartbeatEvent extends EventEnvelope {
  type: 'heartbeat';
}

export interface EndEvent extends EventEnvelope {
  type: 'end';
  finishReason: FinishReason;
  usage: CompletionUsage;
}

/** Error codes a worker reports; they map onto OpenAI error types at the API. */
const ERROR_CODE_LIST = [
  'context_length_exceeded',
  'engine_error',
  'cancelled',
  'generation_timeout',
  'expired',
  // The upstream server (ENGINE=openai) refused the request; `upstream` says how.
  'upstream_rejected',
  // The upstream server did not answer on any of the attempts the job was given.
  'upstream_unavailable',
  // The engine cannot honour an option (a job the API could not check first: queued before any
  // worker was live, or a batch line); `param` names it.
  'unsupported_option',
] as const;

export type CompletionErrorCode = (typeof ERROR_CODE_LIST)[number];

const ERROR_CODES: ReadonlySet<string> = new Set(ERROR_CODE_LIST);

/**
 * A running job's worker sends some event at least this often (a heartbeat when it has no
 * output), so the API can tell a slow answer from a dead worker within a few seconds.
 */
export const HEARTBEAT_INTERVAL_MS = 1000;

/** Silence after which the API presumes the worker running a completion is gone. */
export const WORKER_SILENCE_LIMIT_MS = 3 * HEARTBEAT_INTERVAL_MS;

/**
 * How an upstream OpenAI-compatible server refused a request (a 4xx): what the client is told,
 * as the upstream said it, so a bad field is named in `param` as it would be without the queue.
 */
export interface UpstreamRejection {
  /** The upstream's HTTP status, 400 to 499. */
  status: number;
  type: string;
  param: string | null;
  code: string | null;
}

/** Why an attempt failed. A refusal by an upstream server carries what the client must see of it. */
export type CompletionFailure =
  | { code: Exclude<CompletionErrorCode, 'upstream_rejected' | 'unsupported_option'>; message: string }
  | { code: 'upstream_rejected'; message: string; upstream: UpstreamRejection }
  | { code: 'unsupported_option'; message: string; param: string };

export type ErrorEvent = EventEnvelope & { type: 'error' } & CompletionFailure;

export type TokenEvent = StartedEvent | OutputEvent | HeartbeatEvent | EndEvent | ErrorEvent;

/** Events whose payload a publisher supplies; the envelope is added when it is sent. */
export type TokenEventBody = TokenEvent extends infer E ? (E extends TokenEvent ? Omit<E, keyof EventEnvelope> : never) : never;

/** The events that end an attempt. */
export type FinalEventBody = Extract<TokenEventBody, { type: 'end' | 'error' }>;

export function encodeTokenEvent(event: TokenEvent): string {
  return JSON.stringify(event);
}

type Fields = Record<string, unknown>;

export function isUsage(value: unknown): value is CompletionUsage {
  if (typeof value !== 'object' || value === null) return false;
  const usage = value as Fields;
  const details = usage.prompt_tokens_details;
  const detailsValid = details === undefined || (isRecord(details) && isCount(details.cached_tokens));
  const completion = usage.completion_tokens_details;
  const completionValid = completion === undefined || (isRecord(completion) && isCount(completion.reasoning_tokens));
  return isCount(usage.prompt_tokens) && isCount(usage.completion_tokens) && isCount(usage.total_tokens) && detailsValid && completionValid;
}

const isNullableText = (value: unknown): boolean => value === null || typeof value === 'string';

function isUpstreamRejection(value: unknown): value is UpstreamRejection {
  if (typeof value !== 'object' || value === null) return false;
  const rejection = value as Fields;
  const status = rejection.status;
  return (
    Number.isInteger(status) &&
    (status as number) >= 400 &&
    (status as number) <= 499 &&
    typeof rejection.type === 'string' &&
    isNullableText(rejection.param) &&
    isNullableText(rejection.code)
  );
}

/** Whether the fields that `type` promises are there, with the right types. */
function hasBodyOfItsType(event: Fields): boolean {
  switch (event.type) {
    case 'started':
      return typeof event.workerId === 'string';
    case 'output':
      return Array.isArray(event.parts) && event.parts.length > 0 && event.parts.every(isOutputPart);
    case 'heartbeat':
      return true;
    case 'end':
      return isFinishReason(event.finishReason) && isUsage(event.usage);
    case 'error':
      return isCompletionFailure(event);
    default:
      return false;
  }
}

/** Whether a value is a well-formed failure (an error event's body, or a batch line's failure). */
export function isCompletionFailure(value: unknown): value is CompletionFailure {
  if (!isRecord(value)) return false;
  return (
    ERROR_CODES.has(value.code as string) &&
    typeof value.message === 'string' &&
    (value.code === 'upstream_rejected' ? isUpstreamRejection(value.upstream) : value.upstream === undefined) &&
    (value.code === 'unsupported_option' ? typeof value.param === 'string' : value.param === undefined)
  );
}

/** Checks a parsed value is a well-formed event; anything else is rejected, not guessed. */
export function toTokenEvent(value: unknown): TokenEvent {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('malformed token event');
  const fields = value as Fields;
  const envelopeOk = typeof fields.completionId === 'string' && isCount(fields.attempt) && isCount(fields.seq);
  if (!envelopeOk || !hasBodyOfItsType(fields)) throw new Error('malformed token event');
  return value as TokenEvent;
}

/** Parses one encoded event. */
export function decodeTokenEvent(message: string): TokenEvent {
  return toTokenEvent(JSON.parse(message));
}

/**
 * One reply-channel message for several encoded events (of any completions), in order: a JSON
 * array, or the event itself when there is one. A worker sends what it has for a channel in one
 * message per event-loop turn, so a busy worker costs Redis and the API one message per turn,
 * not one per event.
 */
export function encodeEventBatch(encodedEvents: string[]): string {
  return encodedEvents.length === 1 ? encodedEvents[0] : `[${encodedEvents.join(',')}]`;
}

/**
 * The elements of a reply-channel message, each still to be checked with `toTokenEvent` (one
 * malformed event fails its own completion, not its neighbours). Throws when the message is not
 * JSON at all.
 */
export function eventBatchElements(message: string): unknown[] {
  const parsed: unknown = JSON.parse(message);
  return Array.isArray(parsed) ? parsed : [parsed];
}
