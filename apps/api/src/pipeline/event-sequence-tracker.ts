import { clientErrorOf, NO_CAPACITY } from '@app/contracts';
import type { CompletionFailure, CompletionUsage, FinishReason, OutputPart, TokenEvent } from '@app/contracts';
import { OpenAiError } from '../errors/openai-error';

/** What a request does with one event from its channel. */
export type TrackedEvent =
  | { kind: 'started' }
  /** A new attempt began after output was passed on: the consumer must drop that output. */
  | { kind: 'restarted' }
  | { kind: 'output'; parts: OutputPart[] }
  | { kind: 'end'; finishReason: FinishReason; usage: CompletionUsage }
  | { kind: 'failed'; error: OpenAiError }
  | { kind: 'none' };

export const streamBrokenError = (): OpenAiError =>
  new OpenAiError(500, 'server_error', 'Events of this completion were lost in transit; the answer is incomplete. Please retry.', null, 'events_lost');

export const noCapacityError = (): OpenAiError => OpenAiError.fromClientError(NO_CAPACITY);

export const workerLostError = (): OpenAiError =>
  new OpenAiError(500, 'server_error', 'The worker generating this completion stopped after part of the answer was sent. Please retry.', null, 'worker_lost');

/** How a worker's failure reaches a client: OpenAI's error for its code, from the one table in contracts. */
export function workerError(event: CompletionFailure, promptParam: string): OpenAiError {
  return OpenAiError.fromClientError(clientErrorOf(event, promptParam));
}

/**
 * Checks a completion's events against the attempt and sequence contract: events of an older
 * attempt are ignored; a new attempt is welcome only while no output has been passed on (a retry
 * the client never notices); a missing sequence number fails the request rather than deliver an
 * answer with a hole in it. An event seen already is dropped: Redis clients resend a command
 * whose reply a broken connection lost (a failover), so delivery is at least once.
 */
export class EventSequenceTracker {
  private attempt = 0;
  private nextSeq = 0;
  private outputPassedOn = false;

  /**
   * @param canRestart when the consumer can still take back the output it was given (a
   *   non-stream answer not yet sent), a new attempt after output restarts it instead of failing.
   */
  constructor(
    private readonly canRestart = false,
    /** The door's name for the prompt, which a failure about it names. */
    private readonly promptParam = 'messages',
  ) {}

  accept(event: TokenEvent): TrackedEvent {
    if (event.attempt < this.attempt) return { kind: 'none' };
    if (event.attempt > this.attempt) return this.startAttempt(event);
    if (event.seq < this.nextSeq) return { kind: 'none' };
    if (event.seq > this.nextSeq) return { kind: 'failed', error: streamBrokenError() };
    this.nextSeq += 1;
    switch (event.type) {
      case 'output':
        this.outputPassedOn = true;
        return { kind: 'output', parts: event.parts };
      case 'end':
        return { kind: 'end', finishReason: event.finishReason, usage: event.usage };
      case 'error':
        return { kind: 'failed', error: workerError(event, this.promptParam) };
      case 'started':
      case 'heartbeat':
        return { kind: 'none' };
    }
  }

  /** Whether a lost worker's job can still be retried without the client noticing. */
  get canRetryUnnoticed(): boolean {
    return !this.outputPassedOn || this.canRestart;
  }

  private startAttempt(event: TokenEvent): TrackedEvent {
    if (this.outputPassedOn && !this.canRestart) return { kind: 'failed', error: workerLostError() };
    if (event.type !== 'started' || event.seq !== 0) return { kind: 'failed', error: streamBrokenError() };
    const restarted = this.outputPassedOn;
    this.attempt = event.attempt;
    this.nextSeq = 1;
    this.outputPassedOn = false;
    return restarted ? { kind: 'restarted' } : { kind: 'started' };
  }
}

/**
 * The output a client following `events` (a completion's event log, read so far) holds now: that
 * of the latest attempt, folded by the same contract, up to the first event that breaks it.
 */
export function latestAttemptOutput(events: Iterable<TokenEvent>): OutputPart[] {
  const tracker = new EventSequenceTracker(true);
  let parts: OutputPart[] = [];
  for (const event of events) {
    const tracked = tracker.accept(event);
    if (tracked.kind === 'failed') break;
    if (tracked.kind === 'restarted') parts = [];
    if (tracked.kind === 'output') parts = [...parts, ...tracked.parts];
  }
  return parts;
}
