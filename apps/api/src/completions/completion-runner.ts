import { Injectable, Logger } from '@nestjs/common';
import type { CompletionJobData, CompletionUsage, FinishReason } from '@app/contracts';
import { OpenAiError } from '../errors/openai-error';
import { CompletionEventBus } from './completion-event-bus';
import type { Unsubscribe } from './completion-event-bus';
import { CompletionQueues } from './completion-queues';
import type { CompletionQueue } from './completion-queues';
import { EventSequenceTracker, streamBrokenError } from './event-sequence-tracker';

export interface CompletionEnding {
  finishReason: FinishReason;
  usage: CompletionUsage;
}

export interface RunOptions {
  /** Called with each piece of text, in order. */
  onText: (text: string) => void;
  /** Aborted when the client has gone. */
  signal: AbortSignal;
}

const redisUnavailable = (): OpenAiError =>
  OpenAiError.unavailable('The service cannot reach its queue right now. Please retry shortly.', 'service_unavailable', 2);

/**
 * Runs one completion through the queue: subscribe to its channel, then enqueue its job, then
 * pass its text on until the end event. Subscribing first means no event is ever missed.
 */
@Injectable()
export class CompletionRunner {
  private readonly logger = new Logger(CompletionRunner.name);

  constructor(
    private readonly queues: CompletionQueues,
    private readonly events: CompletionEventBus,
  ) {}

  /** Fails with 404 before anything is queued when no queue serves the model. */
  queueFor(model: string): CompletionQueue {
    const queue = this.queues.forModel(model);
    if (!queue) throw OpenAiError.modelNotFound(model);
    return queue;
  }

  async run(job: CompletionJobData, { onText, signal }: RunOptions): Promise<CompletionEnding> {
    const queue = this.queueFor(job.model);
    const tracker = new EventSequenceTracker();
    let resolve!: (ending: CompletionEnding) => void;
    let reject!: (error: OpenAiError) => void;
    const ending = new Promise<CompletionEnding>((onEnd, onFail) => {
      resolve = onEnd;
      reject = onFail;
    });
    // It may fail before it is awaited (say, while the job is being added); it is still awaited below.
    ending.catch(() => undefined);

    let unsubscribe: Unsubscribe;
    try {
      unsubscribe = await this.events.subscribe(job.completionId, {
        onEvent: (event) => {
          const tracked = tracker.accept(event);
          if (tracked.kind === 'text') onText(tracked.text);
          else if (tracked.kind === 'end') resolve(tracked);
          else if (tracked.kind === 'failed') reject(tracked.error);
        },
        onMalformed: () => reject(streamBrokenError()),
      });
    } catch {
      throw redisUnavailable();
    }

    const onClientGone = (): void => {
      reject(new OpenAiError(499, 'invalid_request_error', 'The client closed the request.'));
      // A job still waiting is dropped; one already running finishes on its own.
      queue.remove(job.completionId).catch(() => undefined);
    };
    signal.addEventListener('abort', onClientGone, { once: true });
    try {
      try {
        await queue.add('chat-completion', job, { jobId: job.completionId });
      } catch (error) {
        this.logger.warn(`enqueue failed: ${error instanceof Error ? error.message : String(error)}`);
        throw redisUnavailable();
      }
      return await ending;
    } finally {
      signal.removeEventListener('abort', onClientGone);
      unsubscribe();
    }
  }
}
