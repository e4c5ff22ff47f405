import type { CompletionUsage, FinishReason, TokenEvent } from '@app/contracts';
import { WORKER_SILENCE_LIMIT_MS } from '@app/contracts';
import type { OpenAiError } from '../errors/openai-error';
import type { CompletionSink } from './completion-sink';
import { EventSequenceTracker, noCapacityError, workerLostError } from './event-sequence-tracker';

export interface CompletionEnding {
  finishReason: FinishReason;
  usage: CompletionUsage;
}

export interface CompletionWatchOptions {
  /** Receives the output, in order, and decides whether a lost worker may be retried unnoticed. */
  sink: CompletionSink;
  /** How long to wait for a worker to start (or restart) the job. */
  startWaitMs: number;
  /** Takes the job off the queue if it is still waiting; false when a worker already holds it. */
  withdraw: () => Promise<boolean>;
}

/**
 * Follows one completion's events to its end, and makes sure it ends: a job no worker starts in
 * time is withdrawn (503), a worker that goes silent is presumed dead (an error if the client
 * already has output, else a wait for the queue's retry), and whatever else fails the request
 * goes through `fail`.
 */
export class CompletionWatch {
  readonly ending: Promise<CompletionEnding>;
  private resolveEnding!: (ending: CompletionEnding) => void;
  private rejectEnding!: (error: OpenAiError) => void;
  private readonly tracker: EventSequenceTracker;
  private timer: NodeJS.Timeout | undefined;
  private workerActive = false;
  private lastEventAt = 0;
  private settled = false;
  private jobEndedByWorker = false;
  private anyOutput = false;

  constructor(private readonly options: CompletionWatchOptions) {
    this.tracker = new EventSequenceTracker(options.sink.canRestart, options.sink.promptParam);
    this.ending = new Promise<CompletionEnding>((resolve, reject) => {
      this.resolveEnding = resolve;
      this.rejectEnding = reject;
    });
    // It may fail before anyone awaits it (say, while the job is being added).
    this.ending.catch(() => undefined);
  }

  /** Call once the job is queued: from now on a worker must start it within the wait limit. */
  awaitStart(): void {
    // Events can come before queue.add has returned: the worker has started already. Or the
    // request has failed meanwhile (client gone, Redis lost): nothing is left to wait for.
    if (this.workerActive || this.settled) return;
    this.arm(this.options.startWaitMs, () => void this.onStartOverdue());
  }

  /** Whether the worker ended the job itself (an end or error event): nothing is left to cancel. */
  get workerEndedJob(): boolean {
    return this.jobEndedByWorker;
  }

  /** Whether any attempt has produced output: until then nothing was generated. */
  get outputReceived(): boolean {
    return this.anyOutput;
  }

  onEvent(event: TokenEvent): void {
    if (this.settled) return;
    const tracked = this.tracker.accept(event);
    if (tracked.kind === 'end' || (tracked.kind === 'failed' && event.type === 'error')) this.jobEndedByWorker = true;
    if (tracked.kind === 'end') return this.settle(() => this.resolveEnding(tracked));
    if (tracked.kind === 'failed') return this.fail(tracked.error);
    if (tracked.kind === 'output') {
      this.anyOutput = true;
      this.options.sink.write(tracked.parts);
    }
    if (tracked.kind === 'restarted') this.options.sink.restart();
    this.expectNextEventSoon();
  }

  fail(error: OpenAiError): void {
    this.settle(() => this.rejectEnding(error));
  }

  /**
   * Any event shows a worker at work; the next must follow within the silence limit. Called for
   * every event, so it only notes the time: the one silence timer, armed by the first
   * event, checks on firing whether anything came since and re-arms for the rest of the limit.
   */
  private expectNextEventSoon(): void {
    this.lastEventAt = performance.now();
    if (this.workerActive) return;
    this.workerActive = true;
    this.arm(WORKER_SILENCE_LIMIT_MS, () => this.onSilenceTimer());
  }

  private onSilenceTimer(): void {
    const silentFor = performance.now() - this.lastEventAt;
    if (silentFor < WORKER_SILENCE_LIMIT_MS) this.arm(WORKER_SILENCE_LIMIT_MS - silentFor, () => this.onSilenceTimer());
    else this.onWorkerSilent();
  }

  private onWorkerSilent(): void {
    this.workerActive = false;
    // The queue hands the job to another worker; wait for that as for a first start. But with
    // output already on the wire a retry would repeat or contradict it: end with an error.
    if (this.tracker.canRetryUnnoticed) this.awaitStart();
    else this.fail(workerLostError());
  }

  private async onStartOverdue(): Promise<void> {
    if (this.workerActive || this.settled) return;
    const withdrawn = await this.options.withdraw().catch(() => false);
    if (withdrawn) this.fail(noCapacityError());
    // A worker took it just now: its events are due within the silence limit.
    else if (!this.workerActive) this.expectNextEventSoon();
  }

  private arm(ms: number, action: () => void): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(action, ms);
  }

  private settle(action: () => void): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    action();
  }
}
