import type { CompletionUsage, FinishReason } from './completion-job';

/**
 * Events a worker publishes on a completion's channel. Every event carries the attempt that
 * produced it (a retried job starts a new attempt) and a sequence number that starts at 0 with
 * each attempt's `started` event, so a subscriber can detect a gap, a duplicate or a stale
 * attempt instead of silently delivering a wrong text.
 */
interface EventEnvelope {
  attempt: number;
  seq: number;
}

export interface StartedEvent extends EventEnvelope {
  type: 'started';
  workerId: string;
}

export interface DeltaEvent extends EventEnvelope {
  type: 'delta';
  text: string;
}

/** Sent while the engine works without producing text (long prefill), to prove liveness. */
export interface HeartbeatEvent extends EventEnvelope {
  type: 'heartbeat';
}

export interface EndEvent extends EventEnvelope {
  type: 'end';
  finishReason: FinishReason;
  usage: CompletionUsage;
}

/** Error codes a worker reports; they map onto OpenAI error types at the API. */
export type CompletionErrorCode =
  | 'context_length_exceeded'
  | 'engine_error'
  | 'cancelled'
  | 'generation_timeout'
  | 'expired';

/**
 * A running job's worker sends some event at least this often (a heartbeat when it has no
 * text), so the API can tell a slow answer from a dead worker within a few seconds.
 */
export const HEARTBEAT_INTERVAL_MS = 1000;

/** Silence after which the API presumes the worker running a completion is gone. */
export const WORKER_SILENCE_LIMIT_MS = 3 * HEARTBEAT_INTERVAL_MS;

export interface ErrorEvent extends EventEnvelope {
  type: 'error';
  code: CompletionErrorCode;
  message: string;
}

export type TokenEvent = StartedEvent | DeltaEvent | HeartbeatEvent | EndEvent | ErrorEvent;

/** Events whose payload a publisher supplies; the envelope is added when it is sent. */
export type TokenEventBody =
  | Omit<StartedEvent, keyof EventEnvelope>
  | Omit<DeltaEvent, keyof EventEnvelope>
  | Omit<HeartbeatEvent, keyof EventEnvelope>
  | Omit<EndEvent, keyof EventEnvelope>
  | Omit<ErrorEvent, keyof EventEnvelope>;

export function encodeTokenEvent(event: TokenEvent): string {
  return JSON.stringify(event);
}

const EVENT_TYPES = new Set<TokenEvent['type']>(['started', 'delta', 'heartbeat', 'end', 'error']);

/** Parses a channel message; anything that is not a well-formed event is rejected, not guessed. */
export function decodeTokenEvent(message: string): TokenEvent {
  const event = JSON.parse(message) as TokenEvent;
  if (
    typeof event !== 'object' ||
    event === null ||
    !EVENT_TYPES.has(event.type) ||
    !Number.isInteger(event.attempt) ||
    !Number.isInteger(event.seq)
  ) {
    throw new Error('malformed token event');
  }
  return event;
}
