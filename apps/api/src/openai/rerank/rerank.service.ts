import { Injectable } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import type { FastifyReply } from 'fastify';
import { newTimeOrderedId } from '../../http/time-ordered-ids';
import { keeplessDoor, FormattedReply } from '../common/buffered-reply';
import { CompletionUseCase } from '../../pipeline/completion-use-case';
import { RerankFormatter } from './rerank-formatter';
import { toRankJob } from './rerank-job.mapper';
import { PROMPT_PARAM } from './rerank-replies';
import type { RerankRequestDto } from './rerank-request.dto';

/** One rerank request, once HTTP has been read. */
export interface RerankCall {
  request: RerankRequestDto;
  owner: string;
  clientGone: AbortSignal;
  exchange: FastifyReply;
  acceptedAt: number;
}

/** The rerank door's use case: its mapping to a `rank` job, run through the flow every door shares. */
@Injectable()
export class RerankService {
  constructor(
    private readonly completions: CompletionUseCase,
    private readonly env: ApiEnv,
  ) {}

  async complete({ request, owner, clientGone, exchange, acceptedAt }: RerankCall): Promise<void> {
    const mapped = toRankJob(request, newTimeOrderedId('rerank-', acceptedAt), acceptedAt, this.env.MAX_QUEUE_WAIT_MS);
    // Rerank APIs take no service_tier: the caller's default tier applies.
    const job = this.completions.withGrantedTier(mapped, undefined, owner);
    const { documents } = job.options;
    const formatter = new RerankFormatter(job.id, job.model, documents.length, {
      topN: request.top_n,
      documents: request.return_documents === false ? undefined : documents,
    });
    await this.completions.complete(
      { job, owner, clientGone, exchange, streamed: false },
      keeplessDoor(new FormattedReply(exchange, PROMPT_PARAM, (parts, { usage }) => formatter.body(parts, usage))),
    );
  }
}
