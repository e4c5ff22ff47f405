import { Injectable } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { newResponseId, newItemId } from './response-ids';
import { responseUsage } from './response-object';
import { ResponsesService } from './responses.service';
import type { CompactRequestDto } from './compact-request.dto';
import { ConversationSummary } from './conversation-summary';

/** One `POST /v1/responses/compact`, once HTTP has been read. */
export interface CompactCall {
  request: CompactRequestDto;
  owner: string;
  acceptedAt: number;
  clientGone: AbortSignal;
  reply: FastifyReply;
}

/**
 * `POST /v1/responses/compact`: a summarising turn over the conversation (its input, after the
 * response `previous_response_id` names; ConversationSummary), answered with the last user
 * messages as they were and the one `compaction` item that stands for them and the summary. A
 * later request that sends the item back gives the model what it holds in its place
 * (responses-job.mapper.ts).
 */
@Injectable()
export class CompactionService {
  constructor(
    private readonly responses: ResponsesService,
    private readonly summary: ConversationSummary,
  ) {}

  async compact({ request, owner, acceptedAt, clientGone, reply }: CompactCall): Promise<void> {
    const id = newResponseId(acceptedAt);
    const { previous, earlier, history } = await this.responses.history(owner, request.previous_response_id ?? undefined, request.input);
    const continuedKey = previous?.affinityKey;
    const { item, kept, usage } = await this.summary.summarise({
      request,
      owner,
      history,
      earlierLength: earlier.length,
      continuedKey,
      jobId: id,
      acceptedAt,
      clientGone,
      exchange: reply,
    });
    const keptItems = kept.map((text) => ({
      type: 'message',
      id: newItemId('msg'),
      role: 'user',
      content: [{ type: 'input_text', text }],
      status: 'completed',
    }));
    await reply.send({
      id,
      object: 'response.compaction',
      created_at: Math.floor(acceptedAt / 1000),
      output: [...keptItems, item],
      usage: responseUsage(usage),
    });
  }
}
