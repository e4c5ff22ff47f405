import { Module } from '@nestjs/common';
import type { DynamicModule } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { ApiEnv } from '@app/config';
import { ApiKeyGuard } from './auth/api-key.guard';
import { BatchCoordinator } from './batches/batch-coordinator';
import { BatchRecords } from './batches/batch-records';
import { BatchQueue } from './batches/batch-queue';
import { batchWorkerProviders } from './batches/batch-worker';
import { BatchesController } from './batches/batches.controller';
import { ChatCompletionsController } from './chat/chat-completions.controller';
import { ChatCompletionService } from './chat/chat-completion.service';
import { ChatCompletionStore } from './chat/chat-completion-store';
import { ApiRedisModule } from './redis/api-redis.module';
import { CompletionAdmission } from './completions/completion-admission';
import { CompletionEventBus } from './completions/completion-event-bus';
import { CompletionQueues } from './completions/completion-queues';
import { AffinityLookup } from './completions/affinity-lookup';
import { AffinityPlacement } from './completions/affinity-placement';
import { ExpressLane } from './completions/express-lane';
import { FairShare } from './completions/fair-share';
import { FairShareCounters } from './completions/fair-share-counters';
import { CompletionRunner } from './completions/completion-runner';
import { CompletionUseCase } from './completions/completion-use-case';
import { ServiceTiers } from './completions/service-tiers';
import { WaitingLimit } from './completions/waiting-limit';
import { CompletionResumption } from './stored-completions/completion-resumption';
import { StoredCompletions } from './stored-completions/stored-completions';
import { StoredCompletionsController } from './stored-completions/stored-completions.controller';
import { ModelRegistry } from './models/model-registry';
import { ModelsController } from './models/models.controller';
import { FileRecords } from './files/file-records';
import { fileStorageProviders } from './files/file-storage.providers';
import { FilesController } from './files/files.controller';
import { FilesService } from './files/files.service';
import { ApiKeyRateLimits } from './rate-limits/api-key-rate-limits';
import { BullBoardAdmin } from './admin/bull-board';
import { ApiMetrics } from './observability/api-metrics';
import { HealthController } from './observability/health.controller';
import { MetricsController } from './observability/metrics.controller';
import { RequestTelemetry } from './observability/request-telemetry';
import { ResponsesController } from './responses/responses.controller';
import { ResponsesService } from './responses/responses.service';
import { StoredResponses } from './responses/stored-responses';
import { BackgroundResponses } from './responses/background-responses';
import { CancelMessages } from './responses/cancel-messages';
import { ResponseCancellation } from './responses/response-cancellation';
import { ResponseReplay } from './responses/response-replay';
import { ResponseSettlement } from './responses/response-settlement';

@Module({})
export class ApiModule {
  /** The environment is validated once in main.ts and handed in here. */
  static register(env: ApiEnv): DynamicModule {
    return {
      module: ApiModule,
      imports: [TerminusModule.forRoot(), ApiRedisModule.register(env)],
      controllers: [
        ChatCompletionsController,
        StoredCompletionsController,
        ModelsController,
        HealthController,
        MetricsController,
        FilesController,
        BatchesController,
        ResponsesController,
      ],
      providers: [
        { provide: ApiEnv, useValue: env },
        ApiKeyGuard,
        CompletionQueues,
        CompletionEventBus,
        ModelRegistry,
        WaitingLimit,
        ApiKeyRateLimits,
        CompletionAdmission,
        FairShare,
        FairShareCounters,
        AffinityLookup,
        AffinityPlacement,
        ExpressLane,
        CompletionRunner,
        // The flow every front door shares: admission, keeping, telemetry, the run.
        CompletionUseCase,
        ServiceTiers,
        StoredCompletions,
        CompletionResumption,
        // The chat door's use case; it stores `store: true` requests through StoredCompletions.
        ChatCompletionService,
        { provide: ChatCompletionStore, useExisting: StoredCompletions },
        // Operators' view: metrics, request log, Bull Board.
        ApiMetrics,
        RequestTelemetry,
        BullBoardAdmin,
        // Files API: metadata in Redis, bodies in FILES_STORAGE.
        ...fileStorageProviders,
        FileRecords,
        FilesService,
        // Batch API: records, the coordination queue, and (BATCH_COORDINATOR) its worker.
        BatchRecords,
        BatchQueue,
        BatchCoordinator,
        ...batchWorkerProviders((apiEnv) => apiEnv.BATCH_COORDINATOR),
        // Responses API: stored responses and their items.
        ResponsesService,
        StoredResponses,
        ResponseSettlement,
        BackgroundResponses,
        CancelMessages,
        ResponseReplay,
        ResponseCancellation,
      ],
    };
  }
}
