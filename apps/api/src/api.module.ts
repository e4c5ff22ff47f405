import { Module } from '@nestjs/common';
import type { DynamicModule } from '@nestjs/common';
import type { ApiEnv } from '@app/config';
import { BullBoardAdmin } from './admin/bull-board';
import { BatchesModule } from './batches/batches.module';
import { FilesModule } from './files/files.module';
import { ModelsModule } from './models/models.module';
import { ObservabilityModule } from './observability/observability.module';
import { BATCH_LINE_DOORS } from './openai/batch-line-doors';
import { ChatModule } from './openai/chat/chat.module';
import { EmbeddingsModule } from './openai/embeddings/embeddings.module';
import { RerankModule } from './openai/rerank/rerank.module';
import { ResponsesModule } from './openai/responses/responses.module';
import { TextCompletionsModule } from './openai/text-completions/text-completions.module';
import { TokenizeModule } from './openai/tokenize/tokenize.module';
import { CompletionQueuesModule } from './pipeline/completion-queues.module';
import { ApiRedisModule } from './redis/api-redis.module';

/**
 * An API instance: the front doors side by side (each over the one pipeline), files and batches,
 * models, and operators' views (metrics, health, Bull Board).
 */
@Module({})
export class ApiModule {
  /** The environment is validated once in main.ts and handed in here. */
  static register(env: ApiEnv): DynamicModule {
    return {
      module: ApiModule,
      imports: [
        ApiRedisModule.register(env),
        ChatModule,
        ResponsesModule,
        EmbeddingsModule,
        RerankModule,
        TextCompletionsModule,
        TokenizeModule,
        FilesModule,
        BatchesModule.register({ doors: BATCH_LINE_DOORS, coordinates: (apiEnv) => apiEnv.BATCH_COORDINATOR }),
        ModelsModule,
        ObservabilityModule,
        CompletionQueuesModule,
      ],
      // Operators' view of the queues; it reads every model's queues, the batch queue and the response loops' queue.
      providers: [BullBoardAdmin],
    };
  }
}
