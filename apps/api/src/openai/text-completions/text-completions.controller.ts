import { Body, Controller, HttpCode, Post, Req, Res, UseGuards } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiKeyGuard, callerOf } from '../../auth/api-key.guard';
import { QueueRoomGuard } from '../../pipeline/queue-room';
import { clientGoneSignal } from '../../http/client-gone-signal';
import { TextCompletionRequestDto } from './text-completion-request.dto';
import { TextCompletionsService } from './text-completions.service';

/** The legacy completions door's route: `POST /v1/completions`, a JSON body or SSE. */
@Controller('v1')
@UseGuards(ApiKeyGuard, QueueRoomGuard)
export class TextCompletionsController {
  constructor(private readonly completions: TextCompletionsService) {}

  @Post('completions')
  @HttpCode(200)
  create(@Body() request: TextCompletionRequestDto, @Req() http: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.completions.complete({ request, owner: callerOf(http), clientGone: clientGoneSignal(reply), exchange: reply, acceptedAt: Date.now() });
  }
}
