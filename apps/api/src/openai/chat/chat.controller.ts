import { Body, Controller, HttpCode, Post, Req, Res, UseGuards } from '@nestjs/common';
import type { GenerateJobInput } from '@app/contracts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiKeyGuard, callerOf } from '../../auth/api-key.guard';
import { QueueRoomGuard } from '../../pipeline/queue-room';
import { clientGoneSignal } from '../../http/client-gone-signal';
import { ChatCompletionRequestDto } from './chat-request.dto';
import { ChatCompletionFormatter } from './chat-formatter';
import { BufferedChatCompletion, StreamedChatCompletion } from './chat-replies';
import type { ChatCompletionResponse } from './chat-replies';
import { ChatCompletionService } from './chat.service';
import { newCompletionId } from './completion-ids';

/** The chat door's route: HTTP in (body, caller, disconnect), the service's run, and HTTP out (JSON body or SSE). */
@Controller('v1/chat')
@UseGuards(ApiKeyGuard, QueueRoomGuard)
export class ChatCompletionsController {
  constructor(private readonly completions: ChatCompletionService) {}

  @Post('completions')
  @HttpCode(200)
  async create(@Body() request: ChatCompletionRequestDto, @Req() http: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const acceptedAt = Date.now();
    // Before any await: a client that leaves during admission is seen too.
    const clientGone = clientGoneSignal(reply);
    const owner = callerOf(http);
    const job = this.completions.jobFor(request, owner, newCompletionId(acceptedAt), acceptedAt);
    await this.completions.complete({ request, owner, clientGone, exchange: reply }, job, responseFor(request, job, acceptedAt, reply));
  }
}

/** The client's side: one JSON body, or an SSE stream (numbered for Last-Event-ID when stored, so it can be resumed). */
function responseFor(request: ChatCompletionRequestDto, job: GenerateJobInput, acceptedAt: number, reply: FastifyReply): ChatCompletionResponse {
  const formatter = new ChatCompletionFormatter(
    job.id,
    job.model,
    Math.floor(acceptedAt / 1000),
    request.stream_options?.include_usage === true,
    job.options.logprobs !== undefined,
    job.schedule.tier,
  );
  return request.stream
    ? new StreamedChatCompletion(reply, formatter, request.store === true ? { after: -1 } : undefined)
    : new BufferedChatCompletion(reply, formatter, job.options.choices);
}
