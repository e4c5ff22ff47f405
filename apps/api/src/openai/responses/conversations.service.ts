import { Injectable } from '@nestjs/common';
import { OpenAiError } from '../../errors/openai-error';
import type { ListOrder } from '../../http/cursor-query';
import { MAX_MESSAGES } from '../common/request-limits';
import { inputItems } from './response-items';
import type { ConversationItem } from './response-items';
import { newConversationId } from './conversation-ids';
import { ConversationStore } from './conversation-store';
import type { AppendRefusal, ConversationRecord, ItemPage } from './conversation-store';

/** At most this many items in one conversation (a response on it reads them all as its history). */
export const MAX_CONVERSATION_ITEMS = MAX_MESSAGES;

export const conversationNotFound = (id: string, param: string): OpenAiError => OpenAiError.notFound(`Conversation with id '${id}' not found.`, param);

/** Items of a conversation reference nothing: an `item_reference` there finds no item. */
const noReferences = (): Promise<undefined> => Promise.resolve(undefined);

/**
 * The Conversations API's use cases: items are read and normalised by the Responses door's
 * input reader (ids kept or given), so a conversation holds exactly what a response's input
 * could, and what a response on it is given back.
 */
@Injectable()
export class ConversationsService {
  constructor(private readonly store: ConversationStore) {}

  async create(owner: string, rawItems: Array<Record<string, unknown>>, metadata: Record<string, string>): Promise<ConversationRecord> {
    const items = await inputItems(rawItems, noReferences, 'items');
    const now = Date.now();
    const record: ConversationRecord = { owner, id: newConversationId(now), createdAtMs: now, metadata };
    await this.store.create(record);
    if (items.length > 0) this.refuse(await this.store.append(record.id, items, 'client', MAX_CONVERSATION_ITEMS), record.id);
    return record;
  }

  /** The caller's conversation, or a 404 naming `param`. */
  async find(owner: string, id: string, param = 'conversation_id'): Promise<ConversationRecord> {
    const record = await this.store.find(owner, id);
    if (!record) throw conversationNotFound(id, param);
    return record;
  }

  /**
   * What a response on the conversation is given before its input: every item, oldest first. One
   * that has reached MAX_CONVERSATION_ITEMS takes no more turns.
   */
  async history(owner: string, id: string): Promise<ConversationItem[]> {
    await this.find(owner, id, 'conversation');
    const items = await this.store.allItems(id);
    if (items.length >= MAX_CONVERSATION_ITEMS)
      throw OpenAiError.tooLarge(`A conversation holds at most ${MAX_CONVERSATION_ITEMS} items; this one is full.`, 'conversation');
    return items;
  }

  async addItems(record: ConversationRecord, rawItems: Array<Record<string, unknown>>): Promise<ConversationItem[]> {
    const items = await inputItems(rawItems, noReferences, 'items');
    this.refuse(await this.store.append(record.id, items, 'client', MAX_CONVERSATION_ITEMS), record.id);
    return items;
  }

  async page(record: ConversationRecord, order: ListOrder, limit: number, after?: string): Promise<ItemPage> {
    const page = await this.store.page(record.id, order, limit, after);
    if (!page) throw OpenAiError.invalidRequest(`No item with id '${after}' in this conversation.`, 'after', 'invalid_value');
    return page;
  }

  async item(record: ConversationRecord, itemId: string): Promise<ConversationItem> {
    const item = await this.store.item(record.id, itemId);
    if (!item) throw itemNotFound(itemId);
    return item;
  }

  async removeItem(record: ConversationRecord, itemId: string): Promise<void> {
    if (!(await this.store.removeItem(record.id, itemId))) throw itemNotFound(itemId);
  }

  private refuse(refusal: AppendRefusal | undefined, id: string): void {
    if (!refusal) return;
    if (refusal.refused === 'gone') throw conversationNotFound(id, 'conversation_id');
    if (refusal.refused === 'duplicate')
      throw OpenAiError.invalidRequest(`An item with id '${refusal.itemId}' is already in this conversation.`, 'items', 'invalid_value');
    throw OpenAiError.tooLarge(`A conversation holds at most ${MAX_CONVERSATION_ITEMS} items; this one holds ${refusal.count}.`, 'items');
  }
}

const itemNotFound = (itemId: string): OpenAiError => OpenAiError.notFound(`Item with id '${itemId}' not found.`, 'item_id');
