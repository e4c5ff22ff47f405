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
import { ChatCompletionsController } from './openai/chat/chat.controller';
import { ChatCompletionService } from './openai/chat/chat.service';
import { ChatCompletionStore } from './openai/chat/chat-completion-store';
import { ApiRedisModule } from './redis/api-redis.module';
import { CompletionAdmission } from './pipeline/completion-admission';
import { CompletionEventBus } from './pipeline/completion-event-bus';
import { CompletionQueues } from './pipeline/completion-queues';
import { AffinityLookup } from './pipeline/affinity-lookup';
import { AffinityPlacement } from './pipeline/affinity-placement';
import { ExpressLane } from './pipeline/express-lane';
import { FairShare } from './pipeline/fair-share';
import { FairShareCounters } from './pipeline/fair-share-counters';
import { CompletionRunner } from './pipeline/completion-runner';
import { CompletionUseCase } from './pipeline/completion-use-case';
import { ServiceTiers } from './pipeline/service-tiers';
import { WaitingLimit } from './pipeline/waiting-limit';
import { EventLogReplay } from './openai/shared/event-log-replay';
import { CompletionResumption } from './openai/chat/completion-resumption';
import { StoredCompletions } from './openai/chat/stored-completions';
import { StoredCompletionsController } from './openai/chat/stored-completions.controller';
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
import { ResponsesController } from './openai/responses/responses.controller';
import { ResponsesService } from './openai/responses/responses.service';
import { StoredResponses } from './openai/responses/stored-responses';
import { BackgroundResponses } from './openai/responses/background-responses';
import { CancelMessages } from './openai/responses/cancel-messages';
import { ResponseCancellation } from './openai/responses/response-cancellation';
import { ResponseReplay } from './openai/responses/response-replay';
import { ResponseSettlement } from './openai/responses/response-settlement';

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
        EventLogReplay,
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
