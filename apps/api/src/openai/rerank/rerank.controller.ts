import { Body, Controller, HttpCode, Post, Req, Res, UseGuards } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiKeyGuard, callerOf } from '../../auth/api-key.guard';
import { QueueRoomGuard } from '../../pipeline/queue-room';
import { clientGoneSignal } from '../../http/client-gone-signal';
import { RerankRequestDto } from './rerank-request.dto';
import { RerankService } from './rerank.service';

/** The rerank door's routes, where vLLM and llama.cpp's server have them: `POST /v1/rerank` and `POST /rerank`. */
@Controller()
@UseGuards(ApiKeyGuard, QueueRoomGuard)
export class RerankController {
  constructor(private readonly rerank: RerankService) {}

  @Post(['v1/rerank', 'rerank'])
  @HttpCode(200)
  create(@Body() request: RerankRequestDto, @Req() http: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.rerank.complete({ request, owner: callerOf(http), clientGone: clientGoneSignal(reply), exchange: reply, acceptedAt: Date.now() });
  }
}
