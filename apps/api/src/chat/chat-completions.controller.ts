import { Body, Controller, HttpCode, Post, Res, UseGuards } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import type { CompletionJobData } from '@app/contracts';
import type { FastifyReply } from 'fastify';
import { randomBytes } from 'node:crypto';
import { ApiKeyGuard } from '../auth/api-key.guard';
import { CompletionRunner } from '../completions/completion-runner';
import { toOpenAiError } from '../errors/http-error-mapping';
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
  ) {}

  @Post('completions')
  @HttpCode(200)
  async create(@Body() request: ChatCompletionRequestDto, @Res() reply: FastifyReply): Promise<void> {
    const acceptedAt = Date.now();
    const job = toCompletionJob(request, newCompletionId(), acceptedAt, this.env.MAX_QUEUE_WAIT_MS);
    this.runner.queueFor(job.model);
    const formatter = new ChatCompletionFormatter(
      job.completionId,
      job.model,
      Math.floor(acceptedAt / 1000),
      request.stream_options?.include_usage === true,
    );
    if (request.stream) await this.stream(job, formatter, reply);
    else await this.respond(job, formatter, reply);
  }

  private async respond(job: CompletionJobData, formatter: ChatCompletionFormatter, reply: FastifyReply): Promise<void> {
    let content = '';
    const ending = await this.runner.run(job, {
      onText: (text) => (content += text),
      // Nothing is on the wire yet, so a worker lost mid-answer is retried unnoticed.
      onRestart: () => (content = ''),
      signal: clientGoneSignal(reply),
    });
    await reply.send(formatter.completion(content, ending));
  }

  /** Errors before the first frame are plain HTTP errors; after it, a final error event. */
  private async stream(job: CompletionJobData, formatter: ChatCompletionFormatter, reply: FastifyReply): Promise<void> {
    const sse = new SseResponse(reply.raw, () => {
      reply.hijack();
      return formatter.roleChunk();
    });
    try {
      const ending = await this.runner.run(job, {
        onText: (text) => sse.send(formatter.contentChunk(text)),
        signal: clientGoneSignal(reply),
      });
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
