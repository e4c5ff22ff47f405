import { Module } from '@nestjs/common';
import { ModelsModule } from '../models/models.module';
import { ObservabilityModule } from '../observability/observability.module';
import { RequestTelemetry } from '../observability/request-telemetry';
import { ApiKeyRateLimits } from '../rate-limits/api-key-rate-limits';
import { AffinityLookup } from './affinity-lookup';
import { AffinityPlacement } from './affinity-placement';
import { CompletionAdmission } from './completion-admission';
import { CompletionEventBus } from './completion-event-bus';
import { CompletionQueuesModule } from './completion-queues.module';
import { CompletionRunner } from './completion-runner';
import { CompletionUseCase } from './completion-use-case';
import { ExpressLane } from './express-lane';
import { FairShare } from './fair-share';
import { FairShareCounters } from './fair-share-counters';
import { QueueRoom } from './queue-room';
import { ServiceTiers } from './service-tiers';
import { WaitingLimit } from './waiting-limit';

/**
 * The path every front door's job takes, whatever the door: admission (rate limits, fair share,
 * the waiting limit), placement on a queue, the reply's events, the run and its telemetry.
 */
@Module({
  imports: [CompletionQueuesModule, ModelsModule, ObservabilityModule],
  providers: [
    ApiKeyRateLimits,
    FairShareCounters,
    FairShare,
    WaitingLimit,
    CompletionAdmission,
    AffinityLookup,
    AffinityPlacement,
    ExpressLane,
    CompletionEventBus,
    CompletionRunner,
    ServiceTiers,
    RequestTelemetry,
    CompletionUseCase,
    QueueRoom,
  ],
  exports: [CompletionUseCase, CompletionRunner, QueueRoom],
})
export class PipelineModule {}
