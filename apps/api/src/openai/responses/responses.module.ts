import { Module } from '@nestjs/common';
import { CompletionQueuesModule } from '../../pipeline/completion-queues.module';
import { PipelineModule } from '../../pipeline/pipeline.module';
import { OpenAiCommonModule } from '../common/openai-common.module';
import { BackgroundResponses } from './background-responses';
import { CancelMessages } from './cancel-messages';
import { CompactionSeal } from './compaction-seal';
import { CompactionService } from './compaction.service';
import { ConversationLocks } from './conversation-locks';
import { ConversationStore } from './conversation-store';
import { ConversationTurns } from './conversation-turns';
import { ConversationsController } from './conversations.controller';
import { ConversationsService } from './conversations.service';
import { ResponseCancellation } from './response-cancellation';
import { ResponseReplay } from './response-replay';
import { ResponseSettlement } from './response-settlement';
import { ResponsesController } from './responses.controller';
import { ResponsesService } from './responses.service';
import { StoredResponses } from './stored-responses';
import { ResponseWarmUp } from './response-warm-up';
import { ResponsesWebSocketRoute } from './responses-websocket.route';
import { ApiKeyGuard } from '../../auth/api-key.guard';
import { McpModule } from '../../mcp/mcp.module';
import { ObservabilityModule } from '../../observability/observability.module';
import { McpToolLoop } from './mcp-tool-loop';
import { BackgroundMcpLoops } from './background-mcp-loops';
import { LoopReplay } from './mcp-loop-replay';
import { LoopStepLogs } from './mcp-loop-steps';
import { ResponseLoopQueue } from './response-loop-queue';
import { ModelsModule } from '../../models/models.module';
import { ConversationSummary } from './conversation-summary';
import { ServerCompaction } from './server-compaction';

/**
 * The Responses door: `POST /v1/responses`, its stored and background responses, their items,
 * compaction, its WebSocket mode, its remote MCP tools' loop, and the Conversations API (`/v1/conversations`), whose items are Responses items and whose turns
 * are responses: one door, since each needs the other and no door imports another.
 */
@Module({
  imports: [PipelineModule, OpenAiCommonModule, CompletionQueuesModule, McpModule, ObservabilityModule, ModelsModule],
  controllers: [ResponsesController, ConversationsController],
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
    ConversationSummary,
    ServerCompaction,
    ConversationsService,
    ConversationStore,
    ConversationLocks,
    ConversationTurns,
    ApiKeyGuard,
    ResponseWarmUp,
    ResponsesWebSocketRoute,
    McpToolLoop,
    BackgroundMcpLoops,
    LoopReplay,
    LoopStepLogs,
    ResponseLoopQueue,
  ],
  exports: [ResponseLoopQueue],
})
export class ResponsesModule {}
