import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Req, UseGuards } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ApiKeyGuard, callerOf } from '../../auth/api-key.guard';
import { OpenAiError } from '../../errors/openai-error';
import { cursorPage, parseCursorQuery } from '../../http/cursor-query';
import type { CursorPage } from '../../http/cursor-query';
import type { ConversationItem } from './response-items';
import { conversationObject, deletedConversation } from './conversation-objects';
import type { ConversationObject } from './conversation-objects';
import { AddConversationItemsDto, CreateConversationDto, UpdateConversationDto } from './conversation-request.dto';
import { ConversationStore } from './conversation-store';
import { ConversationsService } from './conversations.service';

/** `include` asks for image URLs, search results and the like, which the text items here do not have: accepted, nothing to add. */
const INCLUDE = new Set(['include', 'include[]']);

/** Refuses any query parameter but `include`, by name. */
function onlyInclude(query: Record<string, unknown>): void {
  const unknown = Object.keys(query).find((name) => !INCLUDE.has(name));
  if (unknown !== undefined) throw OpenAiError.invalidRequest(`Unrecognized request argument supplied: ${unknown}`, unknown, 'unknown_parameter');
}

/**
 * OpenAI's Conversations API: conversations and their items, stored in Redis for every API
 * instance (ConversationStore), each only for the key that created it. A response given
 * `conversation` reads and extends one (the Responses door, ConversationTurns).
 */
@Controller('v1/conversations')
@UseGuards(ApiKeyGuard)
export class ConversationsController {
  constructor(
    private readonly conversations: ConversationsService,
    private readonly store: ConversationStore,
  ) {}

  @Post()
  @HttpCode(200)
  async create(@Body() body: CreateConversationDto, @Req() http: FastifyRequest): Promise<ConversationObject> {
    return conversationObject(await this.conversations.create(callerOf(http), body.items ?? [], body.metadata ?? {}));
  }

  @Get(':id')
  async retrieve(@Param('id') id: string, @Req() http: FastifyRequest): Promise<ConversationObject> {
    return conversationObject(await this.conversations.find(callerOf(http), id));
  }

  /** Replaces the conversation's metadata. */
  @Post(':id')
  @HttpCode(200)
  async update(@Param('id') id: string, @Body() body: UpdateConversationDto, @Req() http: FastifyRequest): Promise<ConversationObject> {
    const record = await this.conversations.find(callerOf(http), id);
    return conversationObject(await this.store.updateMetadata(record, body.metadata));
  }

  @Delete(':id')
  async remove(@Param('id') id: string, @Req() http: FastifyRequest): Promise<ReturnType<typeof deletedConversation>> {
    await this.store.delete(await this.conversations.find(callerOf(http), id));
    return deletedConversation(id);
  }

  /** Appends items (at most 20) after the last; answers the list of those added. */
  @Post(':id/items')
  @HttpCode(200)
  async addItems(
    @Param('id') id: string,
    @Body() body: AddConversationItemsDto,
    @Query() query: Record<string, unknown>,
    @Req() http: FastifyRequest,
  ): Promise<CursorPage<ConversationItem>> {
    onlyInclude(query);
    const record = await this.conversations.find(callerOf(http), id);
    return cursorPage(await this.conversations.addItems(record, body.items), false);
  }

  /** A cursor page of the items (`after`, `limit`, `order`, newest first by default, as at OpenAI). */
  @Get(':id/items')
  async listItems(@Param('id') id: string, @Query() query: Record<string, unknown>, @Req() http: FastifyRequest): Promise<CursorPage<ConversationItem>> {
    const listQuery = Object.fromEntries(Object.entries(query).filter(([name]) => !INCLUDE.has(name)));
    const { after, limit, order } = parseCursorQuery(listQuery, { order: true }, 'desc');
    const record = await this.conversations.find(callerOf(http), id);
    const { items, hasMore } = await this.conversations.page(record, order, limit, after);
    return cursorPage(items, hasMore);
  }

  @Get(':id/items/:itemId')
  async item(
    @Param('id') id: string,
    @Param('itemId') itemId: string,
    @Query() query: Record<string, unknown>,
    @Req() http: FastifyRequest,
  ): Promise<ConversationItem> {
    onlyInclude(query);
    return this.conversations.item(await this.conversations.find(callerOf(http), id), itemId);
  }

  /** Removes an item; answers the conversation, as OpenAI does. */
  @Delete(':id/items/:itemId')
  async removeItem(@Param('id') id: string, @Param('itemId') itemId: string, @Req() http: FastifyRequest): Promise<ConversationObject> {
    const record = await this.conversations.find(callerOf(http), id);
    await this.conversations.removeItem(record, itemId);
    return conversationObject(record);
  }
}
