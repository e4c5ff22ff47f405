import { Injectable } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import type { JobInputOf } from '@app/contracts';
import type { FastifyReply } from 'fastify';
import { newTimeOrderedId } from '../../http/time-ordered-ids';
import { keeplessDoor, FormattedReply } from '../common/buffered-reply';
import { CompletionUseCase } from '../../pipeline/completion-use-case';
import type { EmbeddingsRequestDto } from './embeddings-request.dto';
import { EmbeddingsFormatter } from './embeddings-formatter';
import { PROMPT_PARAM } from './embeddings-replies';
import { toEmbeddingJob } from './embeddings-job.mapper';

/** One embeddings request as the service needs it, once HTTP has been read. */
export interface EmbeddingsCall {
  request: EmbeddingsRequestDto;
  owner: string;
  clientGone: AbortSignal;
  exchange: FastifyReply;
  acceptedAt: number;
}

/** The embeddings door's use case: its mapping to an `embed` job, run through the flow every door shares. */
@Injectable()
export class EmbeddingsService {
  constructor(
    private readonly completions: CompletionUseCase,
    private readonly env: ApiEnv,
  ) {}

  jobFor(request: EmbeddingsRequestDto, owner: string, acceptedAt: number): JobInputOf<'embed'> {
    const job = toEmbeddingJob(request, newTimeOrderedId('embd-', acceptedAt), acceptedAt, this.env.MAX_QUEUE_WAIT_MS);
    // OpenAI's embeddings take no service_tier: the caller's default tier applies.
    return this.completions.withGrantedTier(job, undefined, owner);
  }

  async complete({ request, owner, clientGone, exchange, acceptedAt }: EmbeddingsCall): Promise<void> {
    const job = this.jobFor(request, owner, acceptedAt);
    const formatter = new EmbeddingsFormatter(job.model, job.options.inputs.length, request.encoding_format ?? 'float', request.normalize ?? true);
    const response = new FormattedReply(exchange, PROMPT_PARAM, (parts, { usage }) => formatter.body(parts, usage));
    await this.completions.complete({ job, owner, clientGone, exchange, streamed: false }, keeplessDoor(response));
  }
}
