import { Inject, Injectable, Logger } from '@nestjs/common';
import type { OnApplicationShutdown } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { affinityMapKey, completionQueuePrefix, workerQueueName } from '@app/contracts';
import type { CompletionJobData, CompletionJobInput, CompletionResult, TokenEvent } from '@app/contracts';
import { Queue } from 'bullmq';
import type { RedisClient } from '@app/redis';
import { ModelRegistry } from '../models/model-registry';
import { ApiMetrics } from '../observability/api-metrics';
import { COMMANDS_REDIS } from '../redis/api-redis.module';
import type { CompletionQueue } from './completion-queues';
import { PlacedJob } from './placed-job';
import { WaitingLimit } from './waiting-limit';

/** Finished jobs of a worker's own queue stay as briefly as the shared queue's. */
const RETENTION = { removeOnComplete: { age: 60 * 60, count: 1000 }, removeOnFail: { age: 24 * 60 * 60, count: 5000 } };

/** Where a job was placed and why, for metrics and tests. */
export type PlacementOutcome = 'hit' | 'miss' | 'busy' | 'off';

/**
 * Prefix-cache affinity across workers. A job whose affinity key a live worker served last goes to
 * that worker's own queue when fewer jobs wait there than it has sequences; any other job goes to
 * the model's shared queue. A job its chosen worker has not started within AFFINITY_WAIT_MS moves
 * to the shared queue (see PlacedJob), so a dead, draining or busy worker never strands it. The
 * key → worker map is written when a job starts (its `started` event names the worker) and lives
 * AFFINITY_TTL_MS: a dead worker's entries are ignored at once (the live registry no longer lists
 * it) and expire by themselves.
 */
@Injectable()
export class AffinityPlacement implements OnApplicationShutdown {
  private readonly logger = new Logger(AffinityPlacement.name);
  private readonly workerQueues = new Map<string, CompletionQueue>();
  /** Jobs this instance placed on each worker's queue that have not started or moved yet. */
  private readonly placedOn = new Map<string, number>();

  constructor(
    private readonly env: ApiEnv,
    private readonly models: ModelRegistry,
    private readonly waitingLimit: WaitingLimit,
    @Inject(COMMANDS_REDIS) private readonly redis: RedisClient,
    private readonly metrics: ApiMetrics,
  ) {}

  /**
   * Chooses the job's queue. A detached job (a stored completion, whose state is read from the
   * model's queue) and a flex one always go to the shared queue, as does every job with AFFINITY off.
   */
  async place(job: CompletionJobInput, shared: CompletionQueue, detached: boolean): Promise<{ placed: PlacedJob; outcome: PlacementOutcome }> {
    const placement = await this.choose(job, shared, detached);
    this.metrics.affinityPlacements.inc({ model: job.model, outcome: placement.outcome });
    return placement;
  }

  private async choose(job: CompletionJobInput, shared: CompletionQueue, detached: boolean): Promise<{ placed: PlacedJob; outcome: PlacementOutcome }> {
    const record = this.recorder(job);
    const sharedOnly = (outcome: PlacementOutcome) => ({ placed: new PlacedJob(this.waitingLimit, shared, undefined, this.env.AFFINITY_WAIT_MS, record), outcome });
    // A flex job waits below default ones on the shared queue: on a worker's queue it would pass them.
    if (!this.env.AFFINITY || detached || job.schedule.affinityKey === undefined || job.schedule.tier === 'flex') return sharedOnly('off');
    const workerId = await this.redis.get(affinityMapKey(job.model, job.schedule.affinityKey)).catch(() => null);
    const worker = workerId === null ? undefined : this.models.liveWorkers(job.model).find((live) => live.workerId === workerId);
    if (!worker) return sharedOnly('miss');
    const queue = this.forWorker(job.model, worker.workerId);
    const counts = await queue.getJobCounts('wait', 'prioritized').catch(() => undefined);
    const waiting = counts === undefined ? Infinity : (counts.wait ?? 0) + (counts.prioritized ?? 0);
    // Requests that arrive together read the same count: this instance's own placements count too.
    const placedHere = this.placedOn.get(worker.workerId) ?? 0;
    if (Math.max(waiting, placedHere) >= worker.slots) return sharedOnly('busy');
    this.placedOn.set(worker.workerId, placedHere + 1);
    const settled = (moved: boolean) => {
      this.placedOn.set(worker.workerId, (this.placedOn.get(worker.workerId) ?? 1) - 1);
      if (moved) this.metrics.affinityPlacements.inc({ model: job.model, outcome: 'fallback' });
    };
    return { placed: new PlacedJob(this.waitingLimit, shared, queue, this.env.AFFINITY_WAIT_MS, record, settled), outcome: 'hit' };
  }

  /** Notes which worker started a job of the key (any queue's), unless affinity is off. */
  private recorder(job: CompletionJobInput): (event: TokenEvent) => void {
    const { schedule: { affinityKey }, model } = job;
    if (!this.env.AFFINITY || affinityKey === undefined) return () => undefined;
    return (event) => {
      if (event.type !== 'started') return;
      this.redis.set(affinityMapKey(model, affinityKey), event.workerId, 'PX', this.env.AFFINITY_TTL_MS).catch((error: Error) => this.logger.debug(`affinity not recorded: ${error.message}`));
    };
  }

  private forWorker(model: string, workerId: string): CompletionQueue {
    const name = workerQueueName(model, workerId);
    let queue = this.workerQueues.get(name);
    if (!queue) {
      queue = new Queue<CompletionJobData, CompletionResult>(name, { connection: this.redis, prefix: completionQueuePrefix(model), defaultJobOptions: { ...RETENTION, attempts: 1 } });
      this.workerQueues.set(name, queue);
    }
    return queue;
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([...this.workerQueues.values()].map((queue) => queue.close()));
  }
}
