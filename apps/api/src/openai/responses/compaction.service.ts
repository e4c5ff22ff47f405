import { Injectable } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import type { CompletionUsage, OutputPart } from '@app/contracts';
import type { FastifyReply } from 'fastify';
import { FormattedReply, keeplessDoor } from '../common/buffered-reply';
import { CompletionUseCase } from '../../pipeline/completion-use-case';
import { newItemId, newResponseId } from './response-ids';
import type { ConversationItem } from './response-items';
import { itemText } from './response-items';
import { responseUsage } from './response-object';
import { toResponseJob } from './responses-job.mapper';
import { CreateResponseDto } from './responses-request.dto';
import { requestedTier, ResponsesService } from './responses.service';
import type { CompactRequestDto } from './compact-request.dto';
import { CompactionSeal } from './compaction-seal';

/** One `POST /v1/responses/compact`, once HTTP has been read. */
export interface CompactCall {
  request: CompactRequestDto;
  owner: string;
  acceptedAt: number;
  clientGone: AbortSignal;
  reply: FastifyReply;
}

/** The turn that asks the model for the summary, after the conversation it summarises. */
export const SUMMARY_REQUEST = [
  'Context checkpoint: the conversation above is about to be replaced by a summary that you will continue from.',
  'Write that summary now: the goal, what has been done and decided, the facts and results that matter (names, values, paths, tool outputs), and what remains to do.',
  'Write only the summary.',
].join(' ');

/** How a compaction item's content introduces itself to the model that reads it. */
export const SUMMARY_HEADING = 'Summary of the conversation so far:';

/** The summary's length bound, in tokens. */
export const SUMMARY_MAX_TOKENS = 1024;

/** At most this many characters of the last user messages are kept beside the summary. */
export const KEPT_USER_CHARS = 16_000;

/** The user messages kept as they were: the last ones, in order, within KEPT_USER_CHARS (always the very last). */
export function keptUserMessages(history: ConversationItem[]): ConversationItem[] {
  const kept: ConversationItem[] = [];
  let chars = 0;
  for (const item of [...history].reverse()) {
    if (item.type !== 'message' || item.role !== 'user') continue;
    chars += itemText(item.content).length;
    if (kept.length > 0 && chars > KEPT_USER_CHARS) break;
    kept.unshift(item);
  }
  return kept;
}

const summaryText = (parts: OutputPart[]): string =>
  parts
    .map((part) => (part.type === 'text' && part.choice === 0 ? part.text : ''))
    .join('')
    .trim();

/**
 * `POST /v1/responses/compact`: a summarising turn over the conversation (its input, after the
 * response `previous_response_id` names), run on the queue as any response's; the answer is the
 * last user messages as they were and one `compaction` item that seals the summary
 * (CompactionSeal). A later request that sends the item back gives the model the summary in its
 * place (responses-job.mapper.ts).
 */
@Injectable()
export class CompactionService {
  constructor(
    private readonly completions: CompletionUseCase,
    private readonly responses: ResponsesService,
    private readonly seal: CompactionSeal,
    private readonly env: ApiEnv,
  ) {}

  async compact({ request, owner, acceptedAt, clientGone, reply }: CompactCall): Promise<void> {
    const id = newResponseId(acceptedAt);
    const { previous, earlier, history } = await this.responses.history(owner, request.previous_response_id ?? undefined, request.input);
    const summarising: ConversationItem = {
      type: 'message',
      id: newItemId('msg'),
      role: 'user',
      content: [{ type: 'input_text', text: SUMMARY_REQUEST }],
      status: 'completed',
    };
    const turn = Object.assign(new CreateResponseDto(), {
      model: request.model,
      instructions: request.instructions ?? undefined,
      prompt_cache_key: request.prompt_cache_key ?? undefined,
      max_output_tokens: SUMMARY_MAX_TOKENS,
      store: false,
    });
    const { job: mapped } = toResponseJob(
      turn,
      [...history, summarising],
      earlier.length,
      id,
      acceptedAt,
      this.env.MAX_QUEUE_WAIT_MS,
      previous?.affinityKey,
      this.seal.opener(owner),
    );
    const job = this.completions.withGrantedTier(mapped, requestedTier(request.service_tier ?? undefined), owner);
    const body = (parts: OutputPart[], ending: { usage: CompletionUsage }): object => ({
      id,
      object: 'response.compaction',
      created_at: Math.floor(acceptedAt / 1000),
      output: [
        ...keptUserMessages(history),
        { type: 'compaction', id: newItemId('cmp'), encrypted_content: this.seal.seal(owner, `${SUMMARY_HEADING}\n\n${summaryText(parts)}`) },
      ],
      usage: responseUsage(ending.usage),
    });
    await this.completions.complete({ job, owner, clientGone, exchange: reply, streamed: false }, keeplessDoor(new FormattedReply(reply, 'input', body)));
  }
}
