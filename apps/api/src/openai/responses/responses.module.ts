import { Module } from '@nestjs/common';
import { CompletionQueuesModule } from '../../pipeline/completion-queues.module';
import { PipelineModule } from '../../pipeline/pipeline.module';
import { OpenAiCommonModule } from '../common/openai-common.module';
import { BackgroundResponses } from './background-responses';
import { CancelMessages } from './cancel-messages';
import { CompactionSeal } from './compaction-seal';
import { CompactionService } from './compaction.service';
import { ResponseCancellation } from './response-cancellation';
import { ResponseReplay } from './response-replay';
import { ResponseSettlement } from './response-settlement';
import { ResponsesController } from './responses.controller';
import { ResponsesService } from './responses.service';
import { StoredResponses } from './stored-responses';

/** The Responses door: `POST /v1/responses`, its stored and background responses, their items, compaction. */
@Module({
  imports: [PipelineModule, OpenAiCommonModule, CompletionQueuesModule],
  controllers: [ResponsesController],
  providers: [
    ResponsesService,
    StoredResponses,
    ResponseSettlement,
    BackgroundResponses,
    CancelMessages,
    ResponseReplay,
    ResponseCancellation,
    CompactionSeal,
    CompactionService,
  ],
})
export class ResponsesModule {}
