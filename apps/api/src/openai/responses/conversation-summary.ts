import { Injectable } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import type { CompletionUsage, OutputPart } from '@app/contracts';
import type { FastifyReply } from 'fastify';
import { keeplessDoor, ResultReply } from '../common/buffered-reply';
import { CompletionUseCase } from '../../pipeline/completion-use-case';
import { keptUserTexts, latestCompaction, readCompaction, sealedForm } from './compaction-content';
import { CompactionSeal } from './compaction-seal';
import { newItemId } from './response-ids';
import type { ConversationItem } from './response-items';
import { PROMPT_PARAM } from './responses-replies';
import { requestedTier, toResponseJob } from './responses-job.mapper';
import { CreateResponseDto } from './responses-request.dto';

/** The turn that asks the model for the summary, after the conversation it summarises. */
export const SUMMARY_REQUEST = [
  'Context checkpoint: the conversation above is about to be replaced by a summary that you will continue from.',
  'Write that summary now: the goal, what has been done and decided, the facts and results that matter (names, values, paths, tool outputs), and what remains to do.',
  'Write only the summary.',
].join(' ');

/** The summary's length bound, in tokens. */
export const SUMMARY_MAX_TOKENS = 1024;

/** The fields of a request that its summarising turn keeps (the model, its instructions, where it is cached, its tier). */
export type SummarisedRequest = Pick<CreateResponseDto, 'model' | 'instructions' | 'prompt_cache_key' | 'service_tier'>;

/** One summarising pass: the conversation, whose it is, and the request that asked. */
export interface SummaryCall {
  request: SummarisedRequest;
  owner: string;
  history: ConversationItem[];
  /** Items of `history` before the request's own input (errors name input items by their place in it). */
  earlierLength: number;
  /** The affinity key of the response the history continues. */
  continuedKey: string | undefined;
  jobId: string;
  acceptedAt: number;
  clientGone: AbortSignal;
  /** The exchange the request log follows, when the pass is the request's whole answer. */
  exchange?: FastifyReply;
}

/** A sealed compaction item, the user messages it kept, and what the pass cost. */
export interface Summary {
  item: ConversationItem & { type: 'compaction' };
  kept: string[];
  usage: CompletionUsage;
}

const summaryText = (parts: OutputPart[]): string =>
  parts
    .map((part) => (part.type === 'text' && part.choice === 0 ? part.text : ''))
    .join('')
    .trim();

/**
 * Compaction's summarising turn, run on the queue as any response's: the model writes a summary
 * of the conversation, which is sealed (CompactionSeal) with the last user messages into one
 * `compaction` item that stands for the conversation so far (compaction-content.ts). Both
 * `POST /v1/responses/compact` and a create's `context_management` run it.
 */
@Injectable()
export class ConversationSummary {
  constructor(
    private readonly completions: CompletionUseCase,
    private readonly seal: CompactionSeal,
    private readonly env: ApiEnv,
  ) {}

  async summarise({ request, owner, history, earlierLength, continuedKey, jobId, acceptedAt, clientGone, exchange }: SummaryCall): Promise<Summary> {
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
    const opener = this.seal.opener(owner);
    const mapped = toResponseJob(turn, [...history, summarising], earlierLength, jobId, acceptedAt, this.env.MAX_QUEUE_WAIT_MS, continuedKey, opener).job;
    const job = this.completions.withGrantedTier(mapped, requestedTier(request.service_tier ?? undefined), owner);
    const kept = keptUserTexts(
      history,
      latestCompaction(history, (item, position) => readCompaction(opener(item.encrypted_content, `input[${Math.max(position - earlierLength, 0)}]`))),
    );
    const reply = new ResultReply(PROMPT_PARAM, (parts, ending) => ({ summary: summaryText(parts), usage: ending.usage }));
    await this.completions.complete({ job, owner, clientGone, exchange, streamed: false }, keeplessDoor(reply));
    const { summary, usage } = reply.result();
    const item = { type: 'compaction' as const, id: newItemId('cmp'), encrypted_content: this.seal.seal(owner, sealedForm(summary, kept)) };
    return { item, kept, usage };
  }
}
