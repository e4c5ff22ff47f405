import { Injectable } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import type { FastifyReply } from 'fastify';
import { newTimeOrderedId } from '../../http/time-ordered-ids';
import { ModelRegistry } from '../../models/model-registry';
import { keeplessDoor } from '../common/buffered-reply';
import { CompletionUseCase } from '../../pipeline/completion-use-case';
import type { DetokenizeRequestDto, TokenizeRequestDto } from './tokenize-request.dto';
import { toTokenizeJob } from './tokenize-job.mapper';
import { BufferedTokenization } from './tokenize-replies';

/** One tokenize or detokenize request, once HTTP has been read. */
export interface TokenizeCall {
  request: TokenizeRequestDto | DetokenizeRequestDto;
  owner: string;
  clientGone: AbortSignal;
  exchange: FastifyReply;
  acceptedAt: number;
}

/**
 * The tokenizer door's use case: the model's tokenizer is where its weights are, on a worker, so
 * a count is a `tokenize` job on the model's queue like any other (admission, limits, tiers).
 */
@Injectable()
export class TokenizeService {
  constructor(
    private readonly completions: CompletionUseCase,
    private readonly models: ModelRegistry,
    private readonly env: ApiEnv,
  ) {}

  async complete({ request, owner, clientGone, exchange, acceptedAt }: TokenizeCall): Promise<void> {
    const mapped = toTokenizeJob(request, newTimeOrderedId('tok-', acceptedAt), acceptedAt, this.env.MAX_QUEUE_WAIT_MS);
    const job = this.completions.withGrantedTier(mapped, undefined, owner);
    const [worker] = this.models.liveWorkers(job.model);
    const response = new BufferedTokenization(exchange, worker?.contextSize ?? 0);
    await this.completions.complete({ job, owner, clientGone, exchange, streamed: false }, keeplessDoor(response));
  }
}
