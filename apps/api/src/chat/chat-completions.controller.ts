import { Body, Controller, HttpCode, Post, Req, Res, UseGuards } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import type { CompletionJobData } from '@app/contracts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { randomBytes } from 'node:crypto';
import { ApiKeyGuard } from '../auth/api-key.guard';
import { CompletionRunner } from '../completions/completion-runner';
import { toOpenAiError } from '../errors/http-error-mapping';
import { RequestTelemetry } from '../observability/request-telemetry';
import { ApiKeyRateLimits } from '../rate-limits/api-key-rate-limits';
import type { TokenReservation } from '../rate-limits/api-key-rate-limits';
import { ChatCompletionRequestDto } from './chat-completion-request.dto';
import { ChatCompletionFormatter } from './chat-completion-formatter';
import { toCompletionJob } from './completion-job.mapper';
import { SseResponse } from './sse-response';

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
    private readonly runner: CompletionRunner,
    private readonly env: ApiEnv,
    private readonly telemetry: RequestTelemetry,
    private readonly rateLimits: ApiKeyRateLimits,
  ) {}

  @Post('completions')
  @HttpCode(200)
  async create(@Body() request: ChatCompletionRequestDto, @Req() http: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const acceptedAt = Date.now();
    const job = toCompletionJob(request, newCompletionId(), acceptedAt, this.env.MAX_QUEUE_WAIT_MS);
    this.runner.queueFor(job.model);
    const tokens = await this.rateLimits.admit(http.apiKeyId ?? '', job);
    this.telemetry.trackCompletion(reply, job, request.stream === true);
    const formatter = new ChatCompletionFormatter(
      job.completionId,
      job.model,
      Math.floor(acceptedAt / 1000),
      request.stream_options?.include_usage === true,
    );
    if (request.stream) await this.stream(job, formatter, reply, tokens);
    else await this.respond(job, formatter, reply, tokens);
  }

  private async respond(job: CompletionJobData, formatter: ChatCompletionFormatter, reply: FastifyReply, tokens: TokenReservation): Promise<void> {
    let content = '';
    const ending = await this.runner.run(job, {
      onText: (text) => (content += text),
      // Nothing is on the wire yet, so a worker lost mid-answer is retried unnoticed.
      onRestart: () => (content = ''),
      signal: clientGoneSignal(reply),
    });
    tokens.settle(ending.usage);
    await reply.send(formatter.completion(content, ending));
  }

  /** Errors before the first frame are plain HTTP errors; after it, a final error event. */
  private async stream(job: CompletionJobData, formatter: ChatCompletionFormatter, reply: FastifyReply, tokens: TokenReservation): Promise<void> {
    const sse = new SseResponse(reply.raw, () => {
      reply.hijack();
      return formatter.roleChunk();
    });
    try {
      const ending = await this.runner.run(job, {
        onText: (text) => sse.send(formatter.contentChunk(text)),
        signal: clientGoneSignal(reply),
      });
      tokens.settle(ending.usage);
      sse.send(formatter.finishChunk(ending.finishReason));
      if (formatter.includeUsage) sse.send(formatter.usageChunk(ending.usage));
      sse.end();
    } catch (error) {
      if (!sse.isOpen) throw error;
      sse.send(JSON.stringify(toOpenAiError(error).toBody()));
      sse.end();
    }
  }
}
