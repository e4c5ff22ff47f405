import { Module } from '@nestjs/common';
import type { DynamicModule } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { ApiKeyGuard } from './auth/api-key.guard';
import { ChatCompletionsController } from './chat/chat-completions.controller';
import { ApiRedisCloser, apiRedisProviders } from './completions/api-redis.providers';
import { CompletionEventBus } from './completions/completion-event-bus';
import { CompletionQueues } from './completions/completion-queues';
import { CompletionRunner } from './completions/completion-runner';
import { ModelsController } from './models/models.controller';

@Module({})
export class ApiModule {
  /** The environment is validated once in main.ts and handed in here. */
  static register(env: ApiEnv): DynamicModule {
    return {
      module: ApiModule,
      controllers: [ChatCompletionsController, ModelsController],
      providers: [
        { provide: ApiEnv, useValue: env },
        ...apiRedisProviders,
        ApiRedisCloser,
        ApiKeyGuard,
        CompletionQueues,
        CompletionEventBus,
        CompletionRunner,
      ],
    };
  }
}
