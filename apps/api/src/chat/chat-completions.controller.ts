import { Body, Controller, HttpCode, Post, Req, Res, UseGuards } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { randomBytes } from 'node:crypto';
import { ApiKeyGuard } from '../auth/api-key.guard';
import { CompletionAdmission } from '../completions/completion-admission';
import { CompletionRunner } from '../completions/completion-runner';
import type { CompletionEnding } from '../completions/completion-runner';
import { toOpenAiError } from '../errors/http-error-mapping';
import { RequestTelemetry } from '../observability/request-telemetry';
import { ChatCompletionRequestDto } from './chat-completion-request.dto';
import { ChatCompletionFormatter } from './chat-completion-formatter';
import { BufferedChatCompletion, StreamedChatCompletion } from './chat-completion-responses';
import { toCompletionJob } from './completion-job.mapper';

const newCompletionId = (): string => `chatcmpl-${randomBytes(18).toString('base64url')}`;

/** Aborts when the client goes away before its answer is complete. */
function clientGoneSignal(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.on('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}

@Controller('v1/chat')
@UseGuards(ApiKeyGuard)
export class ChatCompletionsController {
  constructor(
    private readonly admission: CompletionAdmission,
    private readonly runner: CompletionRunner,
    private readonly env: ApiEnv,
    private readonly telemetry: RequestTelemetry,
  ) {}

  /** request → job → admission → queue → output parts → the client's JSON body or SSE stream. */
  @Post('completions')
  @HttpCode(200)
  async create(@Body() request: ChatCompletionRequestDto, @Req() http: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const acceptedAt = Date.now();
    const job = toCompletionJob(request, newCompletionId(), acceptedAt, this.env.MAX_QUEUE_WAIT_MS);
    const formatter = new ChatCompletionFormatter(
      job.completionId,
      job.model,
      Math.floor(acceptedAt / 1000),
      request.stream_options?.include_usage === true,
      job.logprobs !== undefined,
    );
    const response = request.stream ? new StreamedChatCompletion(reply, formatter) : new BufferedChatCompletion(reply, formatter, job.choices);
    // From here the runner owns the admission (it gives back what was held on every path).
    const admission = await this.admission.admit(job, http.apiKeyId ?? '');
    this.telemetry.trackCompletion(reply, job, request.stream === true);
    let ending: CompletionEnding;
    try {
      ending = await this.runner.run(job, admission, response, clientGoneSignal(reply));
    } catch (error) {
      this.telemetry.completionFailed(reply, toOpenAiError(error).code);
      return response.fail(error);
    }
    admission.tokens.settle(ending.usage);
    await response.finish(ending);
  }
}
