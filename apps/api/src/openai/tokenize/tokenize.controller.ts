import { Body, Controller, HttpCode, Post, Req, Res, UseGuards } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiKeyGuard, callerOf } from '../../auth/api-key.guard';
import { QueueRoomGuard } from '../../pipeline/queue-room';
import { clientGoneSignal } from '../../http/client-gone-signal';
import { DetokenizeRequestDto, TokenizeRequestDto } from './tokenize-request.dto';
import { TokenizeService } from './tokenize.service';

/** vLLM's tokenizer routes, at the root as vLLM serves them: `POST /tokenize` and `POST /detokenize`. */
@Controller()
@UseGuards(ApiKeyGuard, QueueRoomGuard)
export class TokenizeController {
  constructor(private readonly tokenizer: TokenizeService) {}

  @Post('tokenize')
  @HttpCode(200)
  tokenize(@Body() request: TokenizeRequestDto, @Req() http: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.tokenizer.complete({ request, owner: callerOf(http), clientGone: clientGoneSignal(reply), exchange: reply, acceptedAt: Date.now() });
  }

  @Post('detokenize')
  @HttpCode(200)
  detokenize(@Body() request: DetokenizeRequestDto, @Req() http: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.tokenizer.complete({ request, owner: callerOf(http), clientGone: clientGoneSignal(reply), exchange: reply, acceptedAt: Date.now() });
  }
}
