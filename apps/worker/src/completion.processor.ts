import { Inject, Injectable, Logger } from '@nestjs/common';
import type { OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { completionQueueName, completionQueuePrefix } from '@app/contracts';
import type { CompletionJobData, CompletionResult } from '@app/contracts';
import { WorkerEnv } from '@app/config';
import { UnrecoverableError, Worker } from 'bullmq';
import type { Job } from 'bullmq';
import type { RedisClient } from '@app/redis';
import { INFERENCE_ENGINE } from './engine/inference-engine';
import type { InferenceEngine } from './engine/inference-engine';
import { CompletionCancellations } from './completion-cancellations';
import { QueueWorkerMonitor } from './observability/queue-worker-monitor';
import { generateCompletion } from './generate-completion';
import { TokenEventPublisher } from './token-event-publisher';
import { BLOCKING_REDIS, PUBLISHER_REDIS } from './worker-redis.providers';

/**
 * Takes jobs from this worker's model queue, as many at once as the engine has sequences, and
 * hands each to the generateCompletion use case. It holds no logic of its own.
 */
@Injectable()
export class CompletionProcessor implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(CompletionProcessor.name);
  private worker: Worker<CompletionJobData, CompletionResult> | undefined;

  constructor(
    private readonly env: WorkerEnv,
    @Inject(INFERENCE_ENGINE) private readonly engine: InferenceEngine,
    @Inject(PUBLISHER_REDIS) private readonly publisher: RedisClient,
    @Inject(BLOCKING_REDIS) private readonly blocking: RedisClient,
    private readonly cancellations: CompletionCancellations,
    private readonly monitor: QueueWorkerMonitor,
  ) {}

  onApplicationBootstrap(): void {
    const queueName = completionQueueName(this.env.MODEL_NAME);
    this.worker = new Worker<CompletionJobData, CompletionResult>(queueName, (job, _token, signal) => this.process(job, signal), {
      connection: this.blocking,
      prefix: completionQueuePrefix(this.env.MODEL_NAME),
      // Recorded on each job as processedBy, so operators can see which worker ran it.
      name: this.env.WORKER_ID,
      concurrency: this.engine.slots,
      // A short lock hands a dead worker's jobs to another worker within seconds, not minutes.
      lockDuration: this.env.JOB_LOCK_MS,
      stalledInterval: this.env.JOB_LOCK_MS,
      maxStalledCount: 1,
    });
    this.worker.on('error', (error) => this.logger.error(`queue worker error: ${error.message}`));
    this.monitor.watch(this.worker);
    this.logger.log(`worker ${this.env.WORKER_ID} ready: model ${this.env.MODEL_NAME}, queue ${queueName}, ${this.engine.slots} slots`);
  }

  private async process(job: Job<CompletionJobData, CompletionResult>, queueSignal: AbortSignal | undefined): Promise<CompletionResult> {
    const { completionId } = job.data;
    // Events that cannot be published (Redis gone) reach nobody: stop generating at once.
    const events = new TokenEventPublisher(this.publisher, completionId, job.attemptsStarted, () => this.cancellations.cancel(completionId));
    // Stopped by the API (client gone), by the queue, or by the generation time limit.
    const signals = [this.cancellations.track(completionId), AbortSignal.timeout(this.env.MAX_GENERATION_MS)];
    if (queueSignal) signals.push(queueSignal);
    try {
      return await generateCompletion(job.data, this.engine, events, {
        workerId: this.env.WORKER_ID,
        attempt: job.attemptsStarted,
        signal: AbortSignal.any(signals),
      });
    } catch (error) {
      // Its tokens may already be with the client: a failed generation is never re-run.
      throw new UnrecoverableError(error instanceof Error ? error.message : String(error));
    } finally {
      this.cancellations.untrack(completionId);
    }
  }

  /**
   * Stops taking jobs and lets the running ones finish. Nest runs every onModuleDestroy before
   * any onApplicationShutdown, which is where the engine and RedisClient connections close.
   */
  async onModuleDestroy(): Promise<void> {
    await this.worker?.close();
  }
}
