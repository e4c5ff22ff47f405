import { Injectable } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import type { FastifyReply } from 'fastify';
import { CompletionUseCase } from '../../pipeline/completion-use-case';
import { FormattedReply, keeplessDoor } from '../common/buffered-reply';
import { newTimeOrderedId } from '../../http/time-ordered-ids';
import { TextCompletionFormatter } from './text-completion-formatter';
import { toTextCompletionJob } from './text-completion-job.mapper';
import { PROMPT_PARAM, StreamedTextCompletion } from './text-completion-replies';
import type { TextCompletionRequestDto } from './text-completion-request.dto';

/** One legacy completions request, once HTTP has been read. */
export interface TextCompletionCall {
  request: TextCompletionRequestDto;
  owner: string;
  clientGone: AbortSignal;
  exchange: FastifyReply;
  acceptedAt: number;
}

/** The legacy completions door's use case: plain prompts as a `generate` job, answered whole or streamed. */
@Injectable()
export class TextCompletionsService {
  constructor(
    private readonly completions: CompletionUseCase,
    private readonly env: ApiEnv,
  ) {}

  async complete({ request, owner, clientGone, exchange, acceptedAt }: TextCompletionCall): Promise<void> {
    const mapped = toTextCompletionJob(request, newTimeOrderedId('cmpl-', acceptedAt), acceptedAt, this.env.MAX_QUEUE_WAIT_MS);
    const job = this.completions.withGrantedTier(mapped, undefined, owner);
    const { options } = job;
    const formatter = new TextCompletionFormatter(
      job.id,
      job.model,
      Math.floor(acceptedAt / 1000),
      options.logprobs !== undefined,
      request.stream_options?.include_usage === true,
    );
    const choiceCount = (options.choices ?? 1) * (options.prompt?.inputs.length ?? 1);
    const streamed = request.stream === true;
    const response = streamed
      ? new StreamedTextCompletion(exchange, formatter)
      : new FormattedReply(exchange, PROMPT_PARAM, (parts, ending) => formatter.completion(parts, choiceCount, ending));
    await this.completions.complete({ job, owner, clientGone, exchange, streamed }, keeplessDoor(response));
  }
}
