import { Module } from '@nestjs/common';
import { CompletionQueuesModule } from '../../pipeline/completion-queues.module';
import { PipelineModule } from '../../pipeline/pipeline.module';
import { OpenAiCommonModule } from '../common/openai-common.module';
import { ChatCompletionStore } from './chat-completion-store';
import { ChatCompletionsController } from './chat.controller';
import { ChatCompletionService } from './chat.service';
import { CompletionResumption } from './completion-resumption';
import { StoredCompletions } from './stored-completions';
import { StoredCompletionsController } from './stored-completions.controller';

/** The Chat Completions door: `POST /v1/chat/completions` and its stored completions (`store: true`). */
@Module({
  imports: [PipelineModule, OpenAiCommonModule, CompletionQueuesModule],
  controllers: [ChatCompletionsController, StoredCompletionsController],
  providers: [
    ChatCompletionService,
    StoredCompletions,
    // The door keeps `store: true` requests through this; StoredCompletions is it.
    { provide: ChatCompletionStore, useExisting: StoredCompletions },
    CompletionResumption,
  ],
})
export class ChatModule {}
