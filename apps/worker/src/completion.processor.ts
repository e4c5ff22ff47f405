import { Inject, Injectable, Logger } from '@nestjs/common';
import type { OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import {
  completionQueueName,
  completionQueuePrefix,
  expressQueueName,
  decodeCompletionJob,
  toReplyAddress,
  UnreadableJobError,
  UnservedKindError,
  workerQueueName,
} from '@app/contracts';
import type { CompletionFailure, CompletionJobData, CompletionResult } from '@app/contracts';
import { WorkerEnv } from '@app/config';
import { UnrecoverableError, WaitingError, Worker } from 'bullmq';
import type { Job } from 'bullmq';
import { QUEUE_WORKER_RETRY_DELAY_MS } from '@app/redis';
import type { RedisClient } from '@app/redis';
import { INFERENCE_ENGINE } from './engine/inference-engine';
import type { InferenceEngine } from './engine/inference-engine';
import { CompletionCancellations } from './completion-cancellations';
import { QueueWorkerMonitor } from './observability/queue-worker-monitor';
import { CompletionRequeuedError, generateCompletion } from './generate-completion';
import { JobRetention } from './job-retention';
import { ReplyBatcher } from './reply-batcher';
import { SlotGate } from './slot-gate';
import { TokenEventPublisher } from './token-event-publisher';
import { BLOCKING_REDIS, PUBLISHER_REDIS } from './worker-redis.providers';

/**
 * How long a worker whose engine was unavailable (its upstream server down or overloaded) takes no
 * job: the job it put back goes to another worker, and a worker without a working upstream does
 * not drain the queue into errors meanwhile.
 */
const UNAVAILABLE_ENGINE_BACKOFF_MS = 1000;

/** The engine's slots shared out among `consumers` queue consumers, as evenly as they go. */
export function shareSlots(slots: number, consumers: number): number[] {
  const count = Math.min(slots, consumers);
  return Array.from({ length: count }, (_, index) => Math.floor(slots / count) + (index < slots % count ? 1 : 0));
}

/** Which queue a consumer takes from: the model's shared one, this worker's own, or the express lane. */
type Lane = 'shared' | 'own' | 'express';

/**
 * Takes jobs from this worker's model queue, as many at once as the engine has sequences, and
 * hands each to the generateCompletion use case. It holds no logic of its own. The slots are
 * shared among QUEUE_CONSUMERS BullMQ Workers, which take jobs side by side.
 */
@Injectable()
export class CompletionProcessor implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(CompletionProcessor.name);
  private readonly workers: Array<Worker<CompletionJobData, CompletionResult>> = [];
  private backoffTimer: NodeJS.Timeout | undefined;
  private readonly replies: ReplyBatcher;
  private readonly slots: SlotGate;

  constructor(
    private readonly env: WorkerEnv,
    @Inject(INFERENCE_ENGINE) private readonly engine: InferenceEngine,
    @Inject(PUBLISHER_REDIS) private readonly publisher: RedisClient,
    @Inject(BLOCKING_REDIS) private readonly blocking: RedisClient,
    private readonly cancellations: CompletionCancellations,
    private readonly monitor: QueueWorkerMonitor,
  ) {
    this.replies = new ReplyBatcher(publisher);
    // Express sequences take only the express lane's jobs: the gate shares out the others.
    this.slots = new SlotGate(engine.slots - env.EXPRESS_SEQUENCES);
  }

  onApplicationBootstrap(): void {
    const queueName = completionQueueName(this.env.MODEL_NAME);
    const retention = new JobRetention(this.env.RETAIN_CONTENT);
    // Decoded before anything (retention included) reads it.
    const processor = (lane: Lane) => {
      const run = retention.around<Job<CompletionJobData, CompletionResult>>((job, token, signal) => this.process(job, token, signal, lane));
      return async (job: Job<CompletionJobData, CompletionResult>, token?: string, signal?: AbortSignal): Promise<CompletionResult> => {
        try {
          job.data = decodeCompletionJob(job.data, this.engine.capabilities.kinds);
        } catch (error) {
          throw await this.refuseUnreadable(job, error);
        }
        return run(job, token, signal);
      };
    };
    // A job put back for another worker must not go to one of this worker's own idle consumers,
    // which may already wait for the next job (pausing does not stop a wait under way).
    const consumers = this.engine.mayBeUnavailable ? 1 : this.env.QUEUE_CONSUMERS;
    const ownQueue = workerQueueName(this.env.MODEL_NAME, this.env.WORKER_ID);
    const express = this.env.EXPRESS_SEQUENCES;
    const bulk = this.engine.slots - express;
    // The model's shared queue, then this worker's own (jobs sent here for its prompt cache), then
    // the express lane, whose sequences no other job takes.
    const consumerQueues: Array<{ queue: string; concurrency: number; lane: Lane }> = [
      ...shareSlots(bulk, consumers).map((concurrency) => ({ queue: queueName, concurrency, lane: 'shared' as const })),
      { queue: ownQueue, concurrency: bulk, lane: 'own' },
      ...(express > 0 ? [{ queue: expressQueueName(this.env.MODEL_NAME), concurrency: express, lane: 'express' as const }] : []),
    ];
    for (const [index, { queue, concurrency, lane }] of consumerQueues.entries()) {
      // Each makes its own blocking connection from this one and shares it for its commands.
      const worker = new Worker<CompletionJobData, CompletionResult>(queue, processor(lane), {
        connection: this.blocking,
        prefix: completionQueuePrefix(this.env.MODEL_NAME),
        // Recorded on each job as processedBy, so operators can see which worker ran it.
        name: this.env.WORKER_ID,
        concurrency,
        // A short lock hands a dead worker's jobs to another worker within seconds, not minutes.
        lockDuration: this.env.JOB_LOCK_MS,
        stalledInterval: this.env.JOB_LOCK_MS,
        maxStalledCount: 1,
        // The queue's stalled jobs are found by one consumer per process; more would repeat its scans.
        skipStalledCheck: index > 0 && lane === 'shared',
        runRetryDelay: QUEUE_WORKER_RETRY_DELAY_MS,
      });
      worker.on('error', (error) => this.logger.error(`queue worker error: ${error.message}`));
      this.monitor.watch(worker);
      retention.watch(worker);
      this.workers.push(worker);
    }
    this.logger.log(
      `worker ${this.env.WORKER_ID} ready: model ${this.env.MODEL_NAME}, queues ${consumerQueues.map(({ queue }) => queue).join(', ')}, ${bulk} slots and ${express} express, ${this.workers.length} queue consumers`,
    );
  }

  private async process(
    job: Job<CompletionJobData, CompletionResult>,
    token: string | undefined,
    queueSignal: AbortSignal | undefined,
    lane: Lane,
  ): Promise<CompletionResult> {
    const { id: completionId } = job.data;
    // A job moved from a dead worker's own queue counts the attempts it started there.
    const attempt = job.attemptsStarted + (job.data.schedule.attemptsBefore ?? 0);
    // Events that cannot be published (Redis gone) or that nobody hears: stop generating at once.
    const events = new TokenEventPublisher(this.publisher, this.replies, job.data, attempt, () => this.cancellations.cancel(completionId));
    // Stopped by the API (client gone), by the queue, or by the generation time limit.
    const signals = [this.cancellations.track(completionId), AbortSignal.timeout(this.env.MAX_GENERATION_MS)];
    if (queueSignal) signals.push(queueSignal);
    let release: (() => void) | undefined;
    try {
      // An express job has a sequence of its own: its consumer takes no more jobs than there are.
      if (lane !== 'express') release = await this.slots.acquire({ priority: job.priority, queuedAt: job.timestamp }, AbortSignal.any(signals));
      return await generateCompletion(job.data, this.engine, events, {
        workerId: this.env.WORKER_ID,
        attempt,
        signal: AbortSignal.any(signals),
        requeue: () => this.requeue(job, token),
      });
    } catch (error) {
      // BullMQ's own signal that the job left the active state by our hand, neither done nor failed.
      if (error instanceof CompletionRequeuedError) throw new WaitingError(error.message);
      // Its tokens may already be with the client: a failed generation is never re-run.
      throw new UnrecoverableError(error instanceof Error ? error.message : String(error));
    } finally {
      release?.();
      this.cancellations.untrack(completionId);
    }
  }

  /**
   * A job this worker cannot read (malformed, or written by an API of another version) fails
   * unrun, its reason recorded on the job: retried, it would fail the same way. Whoever waits for
   * it is told at once when its reply address can be read (a batch line gets its failure).
   */
  private async refuseUnreadable(job: Job<CompletionJobData, CompletionResult>, error: unknown): Promise<unknown> {
    if (!(error instanceof UnreadableJobError)) return error;
    this.logger.warn(`job ${job.id} not run: ${error.reason}`);
    const address = toReplyAddress(job.data);
    if (address) {
      const events = new TokenEventPublisher(this.publisher, this.replies, address, job.attemptsStarted);
      events.started(this.env.WORKER_ID);
      await events.finish({ type: 'error', ...this.unreadableFailure(error) }).catch(() => undefined);
    }
    return new UnrecoverableError(`unreadable job: ${error.reason}`);
  }

  /** A kind the model does not run is the client's mistake (queued while no worker was live to say so); the rest is the service's. */
  private unreadableFailure(error: UnreadableJobError): CompletionFailure {
    if (error instanceof UnservedKindError) {
      const message = `The model '${this.env.MODEL_NAME}' is served by an engine (${this.engine.name}) that does not run ${error.kind} requests.`;
      return { code: 'unsupported_option', param: 'model', message };
    }
    return { code: 'engine_error', message: `This worker cannot read the completion's job (${error.reason}); it was not run.` };
  }

  /**
   * Puts a job this worker could not start back at the head of the queue, as a dead worker's job
   * goes back, after pausing this worker for a moment so that another one takes it. A worker
   * whose other slots are free may already be waiting for a job and still win it; the attempt
   * limit bounds that case.
   */
  private async requeue(job: Job<CompletionJobData, CompletionResult>, token: string | undefined): Promise<boolean> {
    if (token === undefined) return false;
    await Promise.all(this.workers.map((worker) => worker.pause(true)));
    clearTimeout(this.backoffTimer);
    this.backoffTimer = setTimeout(() => {
      for (const worker of this.workers) if (!worker.closing) void worker.resume();
    }, UNAVAILABLE_ENGINE_BACKOFF_MS);
    try {
      await job.moveToWait(token);
      this.logger.warn(`job ${job.id} put back in the queue: engine unavailable (attempt ${job.attemptsStarted})`);
      return true;
    } catch (error) {
      this.logger.warn(`job ${job.id} could not go back to the queue: ${error instanceof Error ? error.message : String(error)}`);
      return false;
    }
  }

  /**
   * Stops taking jobs and lets the running ones finish. Nest runs every onModuleDestroy before
   * any onApplicationShutdown, which is where the engine and Redis connections close.
   */
  async onModuleDestroy(): Promise<void> {
    clearTimeout(this.backoffTimer);
    await Promise.all(this.workers.map((worker) => worker.close()));
  }
}
