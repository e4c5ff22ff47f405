import type { CompletionJobInput, StoredAnswer } from '@app/contracts';
import type { ChatCompletionRequestDto, ChatMessageDto } from '../chat/chat-completion-request.dto';
import { ChatCompletionFormatter } from '../chat/chat-completion-formatter';
import { contentText } from '../chat/message-content.validator';
import type { StoredCompletionRecord } from './stored-completions';

/** What a `store: true` request leaves for later: who asked, and what they asked. */
export function storedRecordOf(request: ChatCompletionRequestDto, job: CompletionJobInput, owner: string): StoredCompletionRecord {
  return {
    id: job.id,
    owner,
    model: job.model,
    createdMs: job.schedule.acceptedAt,
    metadata: request.metadata ?? {},
    messages: request.messages,
    choices: job.options.choices ?? 1,
    logprobs: job.options.logprobs !== undefined,
    includeUsage: request.stream_options?.include_usage === true,
    serviceTier: job.schedule.tier,
  };
}

/** The formatter that built (or would have built) this completion's bodies: the same ids and timestamps. */
export function formatterOf(record: StoredCompletionRecord, includeUsage = false): ChatCompletionFormatter {
  return new ChatCompletionFormatter(record.id, record.model, Math.floor(record.createdMs / 1000), includeUsage, record.logprobs, record.serviceTier);
}

/** OpenAI's `chat.completion` of a stored answer, with the metadata it was stored with. */
export function storedCompletionObject(record: StoredCompletionRecord, answer: StoredAnswer): object {
  const body = formatterOf(record).completion(answer.parts, answer, record.choices);
  return { ...body, metadata: record.metadata };
}

/** OpenAI's `ChatCompletionStoreMessage`: an input message with an id, its text, and its parts when it had parts. */
export function storedMessageObject(record: StoredCompletionRecord, message: ChatMessageDto, index: number): object {
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
