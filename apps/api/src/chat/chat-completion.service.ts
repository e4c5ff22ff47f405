import { Injectable } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { withTier } from '@app/contracts';
import type { CompletionJobInput } from '@app/contracts';
import type { FastifyReply } from 'fastify';
import { CompletionAdmission, redisUnavailable } from '../completions/completion-admission';
import type { Admission } from '../completions/completion-admission';
import { CompletionRunner, isQueueFull } from '../completions/completion-runner';
import type { CompletionEnding } from '../completions/completion-runner';
import { ServiceTiers } from '../completions/service-tiers';
import { toOpenAiError } from '../errors/http-error-mapping';
import { RequestTelemetry } from '../observability/request-telemetry';
import type { ChatCompletionRequestDto } from './chat-completion-request.dto';
import type { ChatCompletionResponse } from './chat-completion-responses';
import { ChatCompletionStore } from './chat-completion-store';
import type { StoredRequest } from './chat-completion-store';
import { toCompletionJob } from './completion-job.mapper';
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
 * The chat door's use case: a validated request becomes a job, which is admitted (model known,
 * limits, queue room), recorded first when `store: true`, run through the queue, and ended on the
 * response the controller built: its whole body, or the error. Nothing here reads or writes HTTP.
 */
@Injectable()
export class ChatCompletionService {
  constructor(
    private readonly admission: CompletionAdmission,
    private readonly runner: CompletionRunner,
    private readonly env: ApiEnv,
    private readonly telemetry: RequestTelemetry,
    private readonly store: ChatCompletionStore,
    private readonly tiers: ServiceTiers,
  ) {}

  /** The job a request becomes: the door's mapping, with the service tier this caller is granted. */
  jobFor(request: ChatCompletionRequestDto, owner: string, id: string, acceptedAt: number): CompletionJobInput {
    return withTier(toCompletionJob(request, id, acceptedAt, this.env.MAX_QUEUE_WAIT_MS), this.tiers.granted(request.service_tier, owner));
  }

  /** request → admission → (store) → queue → output parts into `response`, then its end. */
  async complete(call: ChatCompletionCall, job: CompletionJobInput, response: ChatCompletionResponse): Promise<void> {
    const { request, owner, clientGone, exchange } = call;
    // From here the runner owns the admission (it gives back what was held on every path).
    const admission = await this.admission.admit(job, owner);
    const stored = request.store === true ? await this.beginStored(request, job, owner, admission) : undefined;
    this.telemetry.trackCompletion(exchange, job, request.stream === true);
    let ending: CompletionEnding;
    try {
      const storedJob = stored ? { ...job, store: stored.store } : job;
      ending = await this.runner.run(storedJob, admission, response, clientGone, stored?.reply);
    } catch (error) {
      stored?.end({ queued: !isQueueFull(error) });
      this.telemetry.completionFailed(exchange, toOpenAiError(error).code);
      return response.fail(error);
    }
    stored?.end({ queued: true });
    await response.finish(ending);
  }

  /** `store: true`: record the request for later, before its job is queued. */
  private async beginStored(request: ChatCompletionRequestDto, job: CompletionJobInput, owner: string, admission: Admission): Promise<StoredRequest> {
    try {
      return await this.store.begin(storedRecordOf(request, job, owner), request.stream === true);
    } catch {
      admission.abandon();
      throw redisUnavailable();
    }
  }
}
