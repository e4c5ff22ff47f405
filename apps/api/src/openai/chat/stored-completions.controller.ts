import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Req, Res, UseGuards } from '@nestjs/common';
import { ValidateIf } from 'class-validator';
import type { StoredAnswer, StoredCompletionRecord } from '@app/contracts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiKeyGuard, callerOf } from '../../auth/api-key.guard';
import { IsMetadata } from '../common/field-validators';
import { clientGoneSignal } from '../../http/client-gone-signal';
import { CompletionQueues, isInProgress } from '../../pipeline/completion-queues';
import { OpenAiError } from '../../errors/openai-error';
import { CompletionResumption } from './completion-resumption';
import { cursorPage, parseCursorQuery } from '../../http/cursor-query';
import type { CursorPage } from '../../http/cursor-query';
import { storedCompletionObject, storedMessageObject } from './stored-completion-objects';
import type { ChatCompletionBody } from './chat-formatter';
import { StoredCompletions } from './stored-completions';
import { resumeCursor } from '../common/resume-cursor';

export class UpdateStoredCompletionDto {
  /** Replaces the metadata; null clears it. */
  @ValidateIf((body: UpdateStoredCompletionDto) => body.metadata !== null)
  @IsMetadata()
  metadata!: Record<string, string> | null;
}

const notFound = (id: string): OpenAiError => OpenAiError.notFound(`No chat completion found with id '${id}'.`, 'completion_id');

/**
 * OpenAI's stored chat completions (`store: true`): retrieve, list, messages, update metadata,
 * delete, and resuming a completion's stream (`?stream=true`). Only the API key that created a
 * completion sees it; for anyone else it does not exist.
 */
@Controller('v1/chat/completions')
@UseGuards(ApiKeyGuard)
export class StoredCompletionsController {
  constructor(
    private readonly stored: StoredCompletions,
    private readonly resumption: CompletionResumption,
    private readonly queues: CompletionQueues,
  ) {}

  @Get()
  async list(@Query() query: Record<string, unknown>, @Req() http: FastifyRequest): Promise<CursorPage<{ id: string }>> {
    const { items, hasMore } = await this.stored.list(callerOf(http), parseCursorQuery(query, { model: true, metadata: true, order: true }));
    return cursorPage(
      items.map(({ record, answer }) => storedCompletionObject(record, answer)),
      hasMore,
    );
  }

  /** The stored completion; with `?stream=true`, its stream from the client's last event on. */
  @Get(':id')
  async retrieve(@Param('id') id: string, @Query() query: Record<string, unknown>, @Req() http: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const { stream, starting_after: startingAfter, ...rest } = query;
    const unknown = Object.keys(rest)[0];
    if (unknown !== undefined) throw OpenAiError.invalidRequest(`Unrecognized request argument supplied: ${unknown}`, unknown, 'unknown_parameter');
    const record = await this.find(http, id);
    if (stream === 'true') {
      return this.resumption.resume(record, resumeCursor(http.headers['last-event-id'], startingAfter), reply, clientGoneSignal(reply));
    }
    if (stream !== undefined && stream !== 'false') throw OpenAiError.invalidRequest(`'stream' must be true or false.`, 'stream', 'invalid_value');
    await reply.send(await this.completionObject(record));
  }

  @Post(':id')
  @HttpCode(200)
  async update(@Param('id') id: string, @Body() body: UpdateStoredCompletionDto, @Req() http: FastifyRequest): Promise<object> {
    const record = await this.find(http, id);
    // Its answer first: one still being generated (409) or that ended without one (404) is left unchanged.
    const answer = await this.answerOf(record);
    return storedCompletionObject(await this.stored.updateMetadata(record, body.metadata ?? {}), answer);
  }

  @Delete(':id')
  async remove(@Param('id') id: string, @Req() http: FastifyRequest): Promise<{ id: string; object: 'chat.completion.deleted'; deleted: true }> {
    await this.stored.delete(await this.find(http, id));
    return { id, object: 'chat.completion.deleted', deleted: true };
  }

  @Get(':id/messages')
  async messages(@Param('id') id: string, @Query() query: Record<string, unknown>, @Req() http: FastifyRequest): Promise<CursorPage<{ id: string }>> {
    const { after, limit, order } = parseCursorQuery(query, { order: true });
    const record = await this.find(http, id);
    const all = record.messages.map((message, index) => ({ id: `${record.id}-${index}`, ...storedMessageObject(record, message, index) }));
    const ordered = order === 'asc' ? all : all.reverse();
    const afterIndex = ordered.findIndex((message) => message.id === after);
    const start = after === undefined ? 0 : afterIndex < 0 ? ordered.length : afterIndex + 1;
    const selected = ordered.slice(start, start + limit);
    return cursorPage(selected, start + limit < ordered.length);
  }

  private async find(http: FastifyRequest, id: string): Promise<StoredCompletionRecord> {
    const record = await this.stored.find(callerOf(http), id);
    if (!record) throw notFound(id);
    return record;
  }

  /** 409 while its answer is still being generated (retrieve again, or follow it with `?stream=true`). */
  private async completionObject(record: StoredCompletionRecord): Promise<ChatCompletionBody> {
    return storedCompletionObject(record, await this.answerOf(record));
  }

  /** The stored answer; 409 while it is still being generated, 404 when it ended without one. */
  private async answerOf(record: StoredCompletionRecord): Promise<StoredAnswer> {
    const answer = await this.stored.answer(record.id);
    if (answer) return answer;
    const state = await this.queues.forModel(record.model).getJobState(record.id);
    if (isInProgress(state)) {
      throw new OpenAiError(
        409,
        'invalid_request_error',
        `Chat completion '${record.id}' is still being generated.`,
        'completion_id',
        'completion_in_progress',
      );
    }
    // It ended without an answer (an error, or cancelled): nothing was stored.
    throw notFound(record.id);
  }
}
