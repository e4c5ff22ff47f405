import { Injectable } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import type { GenerateJobInput } from '@app/contracts';
import type { FastifyReply } from 'fastify';
import { isQueueFull } from '../../pipeline/waiting-limit';
import { CompletionUseCase } from '../../pipeline/completion-use-case';
import type { ChatCompletionRequestDto } from './chat-request.dto';
import type { ChatCompletionResponse } from './chat-replies';
import { ChatCompletionStore } from './chat-completion-store';
import { toChatJob } from './chat-job.mapper';
import { storedRecordOf } from './stored-record.mapper';

/** One chat completion request as the service needs it, once HTTP has been read. */
export interface ChatCompletionCall {
  request: ChatCompletionRequestDto;
  /** The caller's API key id: it owns what is stored, and its tier and limits apply. */
  owner: string;
  /** Aborts when the client leaves; taken before any await, so one leaving during admission counts. */
  clientGone: AbortSignal;
  /** The exchange the request log follows (RequestTelemetry links the completion to it). */
  exchange: FastifyReply;
}

/**
 * The chat door's use case: its mapping of a validated request to a job, and its part of the
 * shared flow (CompletionUseCase): `store: true` records the request first, and the response the
 * controller built gets the output and the end. Nothing here reads or writes HTTP.
 */
@Injectable()
export class ChatCompletionService {
  constructor(
    private readonly completions: CompletionUseCase,
    private readonly env: ApiEnv,
    private readonly store: ChatCompletionStore,
  ) {}

  /** The job a request becomes: the door's mapping, with the service tier this caller is granted. */
  jobFor(request: ChatCompletionRequestDto, owner: string, id: string, acceptedAt: number): GenerateJobInput {
    return this.completions.withGrantedTier(toChatJob(request, id, acceptedAt, this.env.MAX_QUEUE_WAIT_MS), request.service_tier, owner);
  }

  /** request → admission → (store) → queue → output parts into `response`, then its end. */
  async complete(call: ChatCompletionCall, job: GenerateJobInput, response: ChatCompletionResponse): Promise<void> {
    const { request, owner, clientGone, exchange } = call;
    const streamed = request.stream === true;
    await this.completions.complete(
      { job, owner, clientGone, exchange, streamed },
      {
        response,
        // `store: true`: recorded before its job is queued; a job never queued leaves no record.
        keep: request.store === true ? () => this.store.begin(storedRecordOf(request, job, owner), streamed) : undefined,
        fail: (error, stored) => {
          stored?.end({ queued: !isQueueFull(error) });
          response.fail(error);
        },
        finish: async (ending, stored) => {
          stored?.end({ queued: true });
          await response.finish(ending);
        },
      },
    );
  }
}
