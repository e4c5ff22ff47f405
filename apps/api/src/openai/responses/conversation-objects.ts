import type { ConversationRecord } from './conversation-store';

/** OpenAI's ConversationResource. */
export interface ConversationObject {
  id: string;
  object: 'conversation';
  created_at: number;
  metadata: Record<string, string>;
}

export const conversationObject = (record: ConversationRecord): ConversationObject => ({
  id: record.id,
  object: 'conversation',
  created_at: Math.floor(record.createdAtMs / 1000),
  metadata: record.metadata,
});

/** OpenAI's DeletedConversationResource. */
export const deletedConversation = (id: string): { id: string; object: 'conversation.deleted'; deleted: true } => ({
  id,
  object: 'conversation.deleted',
  deleted: true,
});
