import { Module } from '@nestjs/common';
import { CompletionQueuesModule } from '../../pipeline/completion-queues.module';
import { EventLogReplay } from './event-log-replay';

/** What the front doors share as services (the rest of openai/common/ is plain functions and DTOs). */
@Module({
  imports: [CompletionQueuesModule],
  providers: [EventLogReplay],
  exports: [EventLogReplay],
})
export class OpenAiCommonModule {}
