import { Inject, Injectable, Logger } from '@nestjs/common';
import type { OnApplicationBootstrap } from '@nestjs/common';
import { WorkerEnv } from '@app/config';
import { cancellationsChannel } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import { CANCELLATIONS_REDIS } from './worker-redis.providers';

/** How long a cancellation for a job this worker does not (yet) run is remembered. */
const REMEMBER_MS = 60_000;

/**
 * Listens for the API's "nobody wants this completion" messages on the model's cancellations
 * channel and aborts the matching running job. A cancellation that arrives just before the job
 * starts here is remembered, so the job is aborted the moment it begins.
 */
@Injectable()
export class CompletionCancellations implements OnApplicationBootstrap {
  private readonly logger = new Logger(CompletionCancellations.name);
  private readonly running = new Map<string, AbortController>();
  private readonly recentlyCancelled = new Map<string, number>();

  constructor(
    private readonly env: WorkerEnv,
    @Inject(CANCELLATIONS_REDIS) private readonly subscriber: RedisClient,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.subscriber.on('smessage', (_channel: string, completionId: string) => this.cancel(completionId));
    await this.subscriber.ssubscribe(cancellationsChannel(this.env.MODEL_NAME));
  }

  /** Registers a starting job; its signal aborts when the API cancels it. */
  track(completionId: string): AbortSignal {
    const controller = new AbortController();
    if (this.recentlyCancelled.delete(completionId)) controller.abort(new Error('cancelled'));
    this.running.set(completionId, controller);
    return controller.signal;
  }

  untrack(completionId: string): void {
    this.running.delete(completionId);
  }

  /** Stops a job this worker runs (or is about to run) because nobody will receive its answer. */
  cancel(completionId: string): void {
    const controller = this.running.get(completionId);
    if (controller) {
      this.logger.debug(`cancelling ${completionId}`);
      controller.abort(new Error('cancelled'));
      return;
    }
    const now = Date.now();
    for (const [id, at] of this.recentlyCancelled) {
      if (now - at < REMEMBER_MS) break;
      this.recentlyCancelled.delete(id);
    }
    this.recentlyCancelled.set(completionId, now);
  }
}
