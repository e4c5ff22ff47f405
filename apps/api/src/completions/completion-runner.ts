import { Inject, Injectable, Logger } from '@nestjs/common';
import type { BeforeApplicationShutdown } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { cancellationsChannel } from '@app/contracts';
import type { CompletionJobData } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import { OpenAiError } from '../errors/openai-error';
import { ModelRegistry } from '../models/model-registry';
import { COMMANDS_REDIS } from './api-redis.providers';
import { CompletionEventBus } from './completion-event-bus';
import { CompletionQueues } from './completion-queues';
import type { CompletionQueue } from './completion-queues';
import { CompletionWatch } from './completion-watch';
import type { CompletionEnding } from './completion-watch';
import { streamBrokenError } from './event-sequence-tracker';

export type { CompletionEnding } from './completion-watch';

export interface RunOptions {
  /** Called with each piece of text, in order. */
  onText: (text: string) => void;
  /** For consumers that have sent nothing yet: drop the text received so far, a retry starts over. */
  onRestart?: () => void;
  /** Aborted when the client has gone. */
  signal: AbortSignal;
}

const redisUnavailable = (): OpenAiError =>
  OpenAiError.unavailable('The service cannot reach its queue right now. Please retry shortly.', 'service_unavailable', 2);
const queueFull = (model: string): OpenAiError =>
  OpenAiError.unavailable(`Too many requests are waiting for ${model}. Please retry shortly.`, 'queue_full', 2);
const shuttingDown = (): OpenAiError =>
  OpenAiError.unavailable('This server is shutting down. Please retry.', 'shutting_down', 1);
const clientGone = (): OpenAiError => new OpenAiError(499, 'invalid_request_error', 'The client closed the request.');

/**
 * Runs one completion through the queue: admit it, subscribe to its channel, then enqueue its
 * job, then pass its text on until the end event. Subscribing first means no event is ever
 * missed. Whatever ends a request early (client gone, no worker in time, RedisClient lost, shutdown)
 * also withdraws or cancels its job, so no GPU works for nobody.
 */
@Injectable()
export class CompletionRunner implements BeforeApplicationShutdown {
  private readonly logger = new Logger(CompletionRunner.name);
  private readonly inFlight = new Set<CompletionWatch>();
  private draining = false;

  constructor(
    private readonly env: ApiEnv,
    private readonly queues: CompletionQueues,
    private readonly models: ModelRegistry,
    private readonly events: CompletionEventBus,
    @Inject(COMMANDS_REDIS) private readonly commands: RedisClient,
  ) {}

  /** Fails with 404 before anything is queued when the model is neither configured nor live. */
  queueFor(model: string): CompletionQueue {
    if (!this.models.serves(model)) throw OpenAiError.modelNotFound(model);
    return this.queues.forModel(model);
  }

  async run(job: CompletionJobData, { onText, onRestart, signal }: RunOptions): Promise<CompletionEnding> {
    const queue = this.queueFor(job.model);
    if (this.draining) throw shuttingDown();
    await this.admit(queue, job.model);

    const watch = new CompletionWatch({
      onText,
      onRestart,
      startWaitMs: this.env.MAX_QUEUE_WAIT_MS,
      withdraw: () => this.withdraw(queue, job.completionId),
    });
    let unsubscribe: () => void;
    try {
      unsubscribe = await this.events.subscribe(job.completionId, {
        onEvent: (event) => watch.onEvent(event),
        onMalformed: () => watch.fail(streamBrokenError()),
        onConnectionLost: () => watch.fail(redisUnavailable()),
      });
    } catch {
      throw redisUnavailable();
    }

    const onClientGone = (): void => watch.fail(clientGone());
    signal.addEventListener('abort', onClientGone, { once: true });
    this.inFlight.add(watch);
    let ended = false;
    try {
      try {
        await queue.add('chat-completion', job, { jobId: job.completionId });
      } catch (error) {
        this.logger.warn(`enqueue failed: ${error instanceof Error ? error.message : String(error)}`);
        throw redisUnavailable();
      }
      watch.awaitStart();
      const ending = await watch.ending;
      ended = true;
      return ending;
    } finally {
      signal.removeEventListener('abort', onClientGone);
      this.inFlight.delete(watch);
      unsubscribe();
      if (!ended) this.cancel(queue, job);
    }
  }

  /** Refuses work before anything is queued when the model's queue is already long. */
  private async admit(queue: CompletionQueue, model: string): Promise<void> {
    let waiting: number;
    try {
      waiting = await queue.getWaitingCount();
    } catch {
      throw redisUnavailable();
    }
    if (waiting >= this.env.MAX_WAITING_JOBS) throw queueFull(model);
  }

  /** Takes a job off the queue unless a worker is running it; true when no worker will. */
  private async withdraw(queue: CompletionQueue, completionId: string): Promise<boolean> {
    const removed = await queue.remove(completionId).catch(() => 0);
    if (removed === 1) return true;
    return (await queue.getJobState(completionId)) !== 'active';
  }

  /** Best effort, in the background: drop the job if it waits, stop it if it runs. */
  private cancel(queue: CompletionQueue, job: CompletionJobData): void {
    queue.remove(job.completionId).catch(() => undefined);
    this.commands.spublish(cancellationsChannel(job.model), job.completionId).catch(() => undefined);
  }

  /**
   * SIGTERM: refuse new requests at once, let open ones finish for SHUTDOWN_DRAIN_MS, then end
   * the rest with an error (their jobs are cancelled) so the HTTP server can close.
   */
  beforeApplicationShutdown(): Promise<void> {
    this.draining = true;
    if (this.inFlight.size === 0) return Promise.resolve();
    this.logger.log(`draining ${this.inFlight.size} open completions for up to ${this.env.SHUTDOWN_DRAIN_MS} ms`);
    const deadline = setTimeout(() => {
      for (const watch of this.inFlight) watch.fail(shuttingDown());
    }, this.env.SHUTDOWN_DRAIN_MS);
    deadline.unref();
    return Promise.resolve();
  }
}
