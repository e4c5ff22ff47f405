import { Body, Controller, HttpCode, Post, Req, Res, UseGuards } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { withTier } from '@app/contracts';
import type { CompletionJobInput } from '@app/contracts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiKeyGuard, callerOf } from '../auth/api-key.guard';
import { CompletionAdmission, redisUnavailable } from '../completions/completion-admission';
import type { Admission } from '../completions/completion-admission';
import { CompletionRunner, isQueueFull } from '../completions/completion-runner';
import type { CompletionEnding } from '../completions/completion-runner';
import { ServiceTiers } from '../completions/service-tiers';
import { toOpenAiError } from '../errors/http-error-mapping';
import { clientGoneSignal } from '../http/client-gone-signal';
import { RequestTelemetry } from '../observability/request-telemetry';
import { ChatCompletionRequestDto } from './chat-completion-request.dto';
import { ChatCompletionFormatter } from './chat-completion-formatter';
import { BufferedChatCompletion, StreamedChatCompletion } from './chat-completion-responses';
import { newCompletionId } from './completion-ids';
import { toCompletionJob } from './completion-job.mapper';
import { storedRecordOf } from '../stored-completions/stored-completion-objects';
import { StoredCompletions } from '../stored-completions/stored-completions';


@Controller('v1/chat')
@UseGuards(ApiKeyGuard)
export class ChatCompletionsController {
  constructor(
    private readonly admission: CompletionAdmission,
    private readonly runner: CompletionRunner,
    private readonly env: ApiEnv,
    private readonly telemetry: RequestTelemetry,
    private readonly stored: StoredCompletions,
    private readonly tiers: ServiceTiers,
  ) {}

  /** request → job → admission → queue → output parts → the client's JSON body or SSE stream. */
  @Post('completions')
  @HttpCode(200)
  async create(@Body() request: ChatCompletionRequestDto, @Req() http: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const acceptedAt = Date.now();
    // Before any await: a client that leaves during admission is seen too.
    const clientGone = clientGoneSignal(reply);
    const owner = callerOf(http);
    const job = withTier(toCompletionJob(request, newCompletionId(acceptedAt), acceptedAt, this.env.MAX_QUEUE_WAIT_MS), this.tiers.granted(request.service_tier, owner));
    const storing = request.store === true;
    const formatter = new ChatCompletionFormatter(
      job.id,
      job.model,
      Math.floor(acceptedAt / 1000),
      request.stream_options?.include_usage === true,
      job.options.logprobs !== undefined,
      job.schedule.tier,
    );
    // A stored stream is resumable: its frames are numbered for Last-Event-ID.
    const response = request.stream
      ? new StreamedChatCompletion(reply, formatter, storing ? { after: -1 } : undefined)
      : new BufferedChatCompletion(reply, formatter, job.options.choices);
    // From here the runner owns the admission (it gives back what was held on every path).
    const admission = await this.admission.admit(job, owner);
    const stored = storing ? await this.beginStored(request, job, owner, admission) : undefined;
    this.telemetry.trackCompletion(reply, job, request.stream === true);
    let ending: CompletionEnding;
    try {
      const storedJob = stored ? { ...job, store: stored.store } : job;
      ending = await this.runner.run(storedJob, admission, response, clientGone, stored?.reply);
    } catch (error) {
      stored?.end({ queued: !isQueueFull(error) });
      this.telemetry.completionFailed(reply, toOpenAiError(error).code);
      return response.fail(error);
    }
    stored?.end({ queued: true });
    admission.tokens.settle(ending.usage);
    await response.finish(ending);
  }

  /** `store: true`: record the request for later, before its job is queued. */
  private async beginStored(request: ChatCompletionRequestDto, job: CompletionJobInput, owner: string, admission: Admission): ReturnType<StoredCompletions['begin']> {
    try {
      return await this.stored.begin(storedRecordOf(request, job, owner), request.stream === true);
    } catch {
      admission.abandon();
      throw redisUnavailable();
    }
  }
}
