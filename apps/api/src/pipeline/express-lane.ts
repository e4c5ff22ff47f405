import { Injectable } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import type { CompletionJobInput } from '@app/contracts';
import { ApiMetrics } from '../observability/api-metrics';
import { CompletionQueues } from './completion-queues';
import type { CompletionQueue } from './completion-queues';
import { PlacedJob } from './placed-job';
import { WaitingLimit } from './waiting-limit';

/**
 * The model's express lane (FAIR_SHARE_EXPRESS): a job of a key under its fair share waits there,
 * where only the workers' express sequences (EXPRESS_SEQUENCES) take jobs, so it does not wait for
 * a backlogged key's running job to end. It keeps its fair-share priority; one its lane has not
 * started within FAIR_SHARE_EXPRESS_WAIT_MS (express sequences busy, or no worker has any) moves
 * to the shared queue as an affinity job does (PlacedJob: it runs in one place, never twice).
 * The lane is bounded by the keys: a key is under its share again only once the virtual time has
 * passed all it was charged, so it has at most one job there at a time.
 */
@Injectable()
export class ExpressLane {
  constructor(
    private readonly env: ApiEnv,
    private readonly waitingLimit: WaitingLimit,
    private readonly queues: CompletionQueues,
    private readonly metrics: ApiMetrics,
  ) {}

  place(job: CompletionJobInput, shared: CompletionQueue): PlacedJob {
    this.metrics.fairShareExpress.inc({ model: job.model, outcome: 'placed' });
    const settled = (moved: boolean) => {
      if (moved) this.metrics.fairShareExpress.inc({ model: job.model, outcome: 'fallback' });
    };
    const lane = this.queues.forExpress(job.model);
    return new PlacedJob(this.waitingLimit, shared, lane, this.env.FAIR_SHARE_EXPRESS_WAIT_MS, () => undefined, settled);
  }
}
