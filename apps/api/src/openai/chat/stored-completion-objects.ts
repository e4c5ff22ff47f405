import type { StoredAnswer, StoredChatMessage, StoredCompletionRecord } from '@app/contracts';
import { ChatCompletionFormatter } from './chat-formatter';
import type { ChatCompletionBody } from './chat-formatter';
import { contentText } from '../common/message-content.validator';

/** The formatter that built (or would have built) this completion's bodies: the same ids and timestamps. */
export function formatterOf(record: StoredCompletionRecord, includeUsage = false): ChatCompletionFormatter {
  return new ChatCompletionFormatter(record.id, record.model, Math.floor(record.createdMs / 1000), includeUsage, record.logprobs, record.serviceTier);
}

/** OpenAI's `chat.completion` of a stored answer, with the metadata it was stored with. */
export function storedCompletionObject(record: StoredCompletionRecord, answer: StoredAnswer): ChatCompletionBody {
  const body = formatterOf(record).completion(answer.parts, answer, record.choices);
  return { ...body, metadata: record.metadata };
}

/** OpenAI's `ChatCompletionStoreMessage`: an input message with an id, its text, and its parts when it had parts. */
export function storedMessageObject(record: StoredCompletionRecord, message: StoredChatMessage, index: number): object {
  const content = message.content === null || message.content === undefined ? null : contentText(message.content);
  return {
    id: `${record.id}-${index}`,
    role: message.role,
    content,
    content_parts: Array.isArray(message.content) ? message.content : null,
    ...(message.name !== undefined ? { name: message.name } : {}),
    ...(message.tool_calls !== undefined ? { tool_calls: message.tool_calls } : {}),
    ...(message.tool_call_id !== undefined ? { tool_call_id: message.tool_call_id } : {}),
  };
}
