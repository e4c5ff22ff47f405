import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Req, Res, UseGuards } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiKeyGuard, callerOf } from '../../auth/api-key.guard';
import { QueueRoomGuard } from '../../pipeline/queue-room';
import { OpenAiError } from '../../errors/openai-error';
import { clientGoneSignal } from '../../http/client-gone-signal';
import { cursorPage, parseCursorQuery } from '../../http/cursor-query';
import type { CursorPage } from '../../http/cursor-query';
import { resumeCursor } from '../common/resume-cursor';
import { CreateResponseDto } from './responses-request.dto';
import { CompactRequestDto } from './compact-request.dto';
import { CompactionService } from './compaction.service';
import type { ConversationItem } from './response-items';
import { responseObject } from './response-object';
import { ResponseCancellation } from './response-cancellation';
import { ResponseReplay } from './response-replay';
import { ResponseSettlement } from './response-settlement';
import { ResponsesService } from './responses.service';
import { StoredResponses, isOpenStatus } from './stored-responses';
import type { StoredResponseRecord } from './stored-responses';

/** What `GET /v1/responses/{id}` reads from its query; `include` and `include_obfuscation` ask for nothing these responses have. */
const RETRIEVE_QUERY = new Set(['include', 'include[]', 'stream', 'starting_after', 'include_obfuscation']);

const notFound = (id: string): OpenAiError => OpenAiError.notFound(`Response with id '${id}' not found.`, 'response_id');

/**
 * OpenAI's Responses API: the second front door onto the same queue. A request is mapped to the
 * job the chat door queues and run by the same use case (ResponsesService), and its output parts
 * are formatted as Response objects and stream events (response-output.ts).
 * Stored responses (`store`, OpenAI's default) live in Redis for every instance to read; a
 * background one runs on whatever becomes of its request (background-responses.ts), and is
 * polled, cancelled and streamed again from any instance.
 */
@Controller('v1/responses')
@UseGuards(ApiKeyGuard)
export class ResponsesController {
  constructor(
    private readonly responses: ResponsesService,
    private readonly stored: StoredResponses,
    private readonly settlement: ResponseSettlement,
    private readonly replay: ResponseReplay,
    private readonly cancellation: ResponseCancellation,
    private readonly compaction: CompactionService,
  ) {}

  @Post()
  @UseGuards(QueueRoomGuard)
  @HttpCode(200)
  async create(@Body() request: CreateResponseDto, @Req() http: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const acceptedAt = Date.now();
    // Before any await: a client that leaves while the conversation is read or admitted is seen too.
    const clientGone = clientGoneSignal(reply);
    await this.responses.create({ request, owner: callerOf(http), acceptedAt, clientGone, reply });
  }

  /** OpenAI's compaction of a conversation: its last user messages and one sealed `compaction` item (compaction/). */
  @Post('compact')
  @UseGuards(QueueRoomGuard)
  @HttpCode(200)
  async compact(@Body() request: CompactRequestDto, @Req() http: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const acceptedAt = Date.now();
    const clientGone = clientGoneSignal(reply);
    await this.compaction.compact({ request, owner: callerOf(http), acceptedAt, clientGone, reply });
  }

  /** OpenAI's count of a request's input tokens: the body of `POST /v1/responses`, answered `{object: "response.input_tokens", input_tokens}`. */
  @Post('input_tokens')
  @UseGuards(QueueRoomGuard)
  @HttpCode(200)
  async inputTokens(@Body() request: CreateResponseDto, @Req() http: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const acceptedAt = Date.now();
    const clientGone = clientGoneSignal(reply);
    await this.responses.countInputTokens({ request, owner: callerOf(http), acceptedAt, clientGone, reply });
  }

  /** The response as it stands; with `?stream=true` (a background one), its events after `starting_after`, then live to its end. */
  @Get(':id')
  async retrieve(@Param('id') id: string, @Query() query: Record<string, unknown>, @Req() http: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const unknown = Object.keys(query).find((name) => !RETRIEVE_QUERY.has(name));
    if (unknown !== undefined) throw OpenAiError.invalidRequest(`Unrecognized request argument supplied: ${unknown}`, unknown, 'unknown_parameter');
    const { stream, starting_after: startingAfter } = query;
    if (stream !== undefined && stream !== 'true' && stream !== 'false')
      throw OpenAiError.invalidRequest(`'stream' must be true or false.`, 'stream', 'invalid_value');
    const record = await this.find(http, id);
    if (stream !== 'true') {
      await reply.send(responseObject(record.identity, record.state));
      return;
    }
    if (!record.identity.settings.background) {
      throw OpenAiError.invalidRequest(
        `Only a response created with 'background': true can be streamed again; retrieve it without 'stream'.`,
        'stream',
        'invalid_value',
      );
    }
    await this.replay.stream(record, resumeCursor(http.headers['last-event-id'], startingAfter), reply, clientGoneSignal(reply));
  }

  /** Stops a background response (OpenAI allows no other): it ends `cancelled`; one already ended is answered as it is. */
  @Post(':id/cancel')
  @HttpCode(200)
  async cancel(@Param('id') id: string, @Req() http: FastifyRequest): Promise<object> {
    const record = await this.find(http, id);
    if (!record.identity.settings.background) throw OpenAiError.invalidRequest('Cannot cancel a synchronous response.', 'response_id', 'invalid_value');
    const cancelled = isOpenStatus(record.state.status) ? await this.cancellation.cancel(record) : record;
    if (!cancelled) throw notFound(id);
    return responseObject(cancelled.identity, cancelled.state);
  }

  @Delete(':id')
  async remove(@Param('id') id: string, @Req() http: FastifyRequest): Promise<{ id: string; object: 'response'; deleted: true }> {
    await this.stored.delete(await this.find(http, id));
    return { id, object: 'response', deleted: true };
  }

  @Get(':id/input_items')
  async inputItems(@Param('id') id: string, @Query() query: Record<string, unknown>, @Req() http: FastifyRequest): Promise<CursorPage<ConversationItem>> {
    // `include` asks for image URLs and the like, which text items do not have.
    const listQuery = Object.fromEntries(Object.entries(query).filter(([name]) => name !== 'include' && name !== 'include[]'));
    const { after, limit, order } = parseCursorQuery(listQuery, { order: true }, 'desc');
    const record = await this.find(http, id);
    const own = record.history.slice(record.inputStart);
    const ordered = order === 'asc' ? own : [...own].reverse();
    const afterIndex = after === undefined ? -1 : ordered.findIndex((item) => item.id === after);
    if (after !== undefined && afterIndex < 0) throw OpenAiError.invalidRequest(`No input item with id '${after}' in this response.`, 'after', 'invalid_value');
    const start = afterIndex + 1;
    return cursorPage(ordered.slice(start, start + limit), start + limit < ordered.length);
  }

  /** The caller's response as it truly stands (see ResponseSettlement). */
  private async find(http: FastifyRequest, id: string): Promise<StoredResponseRecord> {
    const found = await this.stored.find(callerOf(http), id);
    const record = found && (await this.settlement.current(found));
    if (!record) throw notFound(id);
    return record;
  }
}
