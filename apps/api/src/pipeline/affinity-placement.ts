import { Inject, Injectable, Logger } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { affinityMapKey } from '@app/contracts';
import type { CompletionJobInput, TokenEvent } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import { ModelRegistry } from '../models/model-registry';
import { ApiMetrics } from '../observability/api-metrics';
import { plainPromptAffinityKey, prefixAffinityKey } from './affinity-key';
import { AffinityLookup } from './affinity-lookup';
import { COMMANDS_REDIS } from '../redis/api-redis.module';
import { CompletionQueues } from './completion-queues';
import type { CompletionQueue } from './completion-queues';
import { PlacedJob } from './placed-job';
import { WaitingLimit } from './waiting-limit';

/** Where a job was placed and why, for metrics and tests. */
export type PlacementOutcome = 'hit' | 'miss' | 'busy' | 'off';

/**
 * Prefix-cache affinity across workers. A job whose affinity key a live worker served last goes to
 * that worker's own queue when fewer jobs wait there than it has sequences and the shared queue is
 * not full (MAX_WAITING_JOBS); any other job goes to the model's shared queue. A job its chosen worker has not started within AFFINITY_WAIT_MS moves
 * to the shared queue (see PlacedJob), so a dead, draining or busy worker never strands it. The
 * key → worker map is written when a job starts (its `started` event names the worker) and lives
 * AFFINITY_TTL_MS: a dead worker's entries are ignored at once (the live registry no longer lists
 * it) and expire by themselves.
 */
@Injectable()
export class AffinityPlacement {
  private readonly logger = new Logger(AffinityPlacement.name);
  /** Jobs this instance placed on each worker's queue that have not started or moved yet. */
  private readonly placedOn = new Map<string, number>();

  constructor(
    private readonly env: ApiEnv,
    private readonly models: ModelRegistry,
    private readonly waitingLimit: WaitingLimit,
    private readonly queues: CompletionQueues,
    @Inject(COMMANDS_REDIS) private readonly redis: RedisClient,
    private readonly metrics: ApiMetrics,
    private readonly lookup: AffinityLookup,
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
    const sharedOnly = (outcome: PlacementOutcome, affinityKey?: string) => ({
      placed: new PlacedJob(this.waitingLimit, shared, undefined, this.env.AFFINITY_WAIT_MS, this.recorder(job.model, affinityKey)),
      outcome,
    });
    // An embedding or a token count caches nothing a later request could reuse: any worker serves it as well.
    if (!this.env.AFFINITY || job.kind !== 'generate') return sharedOnly('off');
    // Hashed here, not at the door: with affinity off a request pays nothing for it.
    const { prompt } = job.options;
    const affinityKey =
      job.schedule.affinityKey ?? (prompt ? plainPromptAffinityKey(prompt.inputs[0]) : prefixAffinityKey(job.options.messages, job.options.tools?.definitions));
    // A flex job waits below default ones on the shared queue: on a worker's queue it would pass
    // them. It and a detached one still note where they ran, for the conversation's next turn.
    if (detached || job.schedule.tier === 'flex') return sharedOnly('off', affinityKey);
    const view = await this.lookup.read(job.model, affinityKey, shared).catch(() => undefined);
    const worker = view?.workerId === undefined ? undefined : this.models.liveWorkers(job.model).find((live) => live.workerId === view.workerId);
    if (!view || !worker) return sharedOnly('miss', affinityKey);
    const queue = this.queues.forWorker(job.model, worker.workerId);
    const { waitingOnWorker: waiting, waitingOnShared: sharedWaiting } = view;
    // Requests that arrive together read the same count: this instance's own placements count too.
    const placedHere = this.placedOn.get(worker.workerId) ?? 0;
    // A full shared queue refuses the job (queue_full) rather than take it later, when it moves.
    if (Math.max(waiting, placedHere) >= worker.slots || sharedWaiting >= this.env.MAX_WAITING_JOBS) return sharedOnly('busy', affinityKey);
    this.placedOn.set(worker.workerId, placedHere + 1);
    const settled = (moved: boolean) => {
      this.placedOn.set(worker.workerId, (this.placedOn.get(worker.workerId) ?? 1) - 1);
      if (moved) this.metrics.affinityPlacements.inc({ model: job.model, outcome: 'fallback' });
    };
    const record = this.recorder(job.model, affinityKey);
    return { placed: new PlacedJob(this.waitingLimit, shared, queue, this.env.AFFINITY_WAIT_MS, record, settled), outcome: 'hit' };
  }

  /** Notes which worker started a job of the key (any queue's); nothing without a key (affinity off). */
  private recorder(model: string, affinityKey: string | undefined): (event: TokenEvent) => void {
    if (affinityKey === undefined) return () => undefined;
    return (event) => {
      if (event.type !== 'started') return;
      this.redis
        .set(affinityMapKey(model, affinityKey), event.workerId, 'PX', this.env.AFFINITY_TTL_MS)
        .catch((error: Error) => this.logger.debug(`affinity not recorded: ${error.message}`));
    };
  }
}
