import { Module } from '@nestjs/common';
import { CompletionQueuesModule } from '../../pipeline/completion-queues.module';
import { PipelineModule } from '../../pipeline/pipeline.module';
import { OpenAiCommonModule } from '../common/openai-common.module';
import { BackgroundResponses } from './background-responses';
import { CancelMessages } from './cancel-messages';
import { ResponseCancellation } from './response-cancellation';
import { ResponseReplay } from './response-replay';
import { ResponseSettlement } from './response-settlement';
import { ResponsesController } from './responses.controller';
import { ResponsesService } from './responses.service';
import { StoredResponses } from './stored-responses';
import { ResponseWarmUp } from './response-warm-up';
import { ResponsesWebSocketRoute } from './responses-websocket.route';
import { ApiKeyGuard } from '../../auth/api-key.guard';

/** The Responses door: `POST /v1/responses`, its stored and background responses, their items, and its WebSocket mode. */
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
    ApiKeyGuard,
    ResponseWarmUp,
    ResponsesWebSocketRoute,
  ],
})
export class ResponsesModule {}
