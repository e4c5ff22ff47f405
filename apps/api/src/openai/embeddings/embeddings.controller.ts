import { Body, Controller, HttpCode, Post, Req, Res, UseGuards } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiKeyGuard, callerOf } from '../../auth/api-key.guard';
import { QueueRoomGuard } from '../../pipeline/queue-room';
import { clientGoneSignal } from '../../http/client-gone-signal';
import { EmbeddingsRequestDto } from './embeddings-request.dto';
import { EmbeddingsService } from './embeddings.service';

/** The embeddings door's route: `POST /v1/embeddings`, answered as one JSON body. */
@Controller('v1')
@UseGuards(ApiKeyGuard, QueueRoomGuard)
export class EmbeddingsController {
  constructor(private readonly embeddings: EmbeddingsService) {}

  @Post('embeddings')
  @HttpCode(200)
  async create(@Body() request: EmbeddingsRequestDto, @Req() http: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const acceptedAt = Date.now();
    // Before any await: a client that leaves during admission is seen too.
    const clientGone = clientGoneSignal(reply);
    await this.embeddings.complete({ request, owner: callerOf(http), clientGone, exchange: reply, acceptedAt });
  }
}
