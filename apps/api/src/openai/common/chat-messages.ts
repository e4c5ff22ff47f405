import type { ChatMessage, ToolCall } from '@app/contracts';
import { OpenAiError } from '../../errors/openai-error';
import type { ChatMessageDto } from './chat-message.dto';
import { contentText } from './message-content.validator';
import { MAX_MESSAGE_CHARS } from './request-limits';

const invalid = (message: string, param: string): OpenAiError => OpenAiError.invalidRequest(message, param, 'invalid_value');

function messageText(message: ChatMessageDto, index: number): string {
  const content = message.content === null || message.content === undefined ? '' : contentText(message.content);
  if (content.length > MAX_MESSAGE_CHARS) {
    throw OpenAiError.tooLarge(`A message may hold at most ${MAX_MESSAGE_CHARS} characters.`, `messages[${index}].content`);
  }
  return content;
}

/**
 * The conversation as the engine sees it. Checks what depends on a message's role or on the
 * messages before it: content present, tool calls only from the assistant, every tool message
 * answering a call made earlier (OpenAI answers both with 400 naming the field).
 */
export function toChatMessages(messages: ChatMessageDto[]): ChatMessage[] {
  const calledIds = new Set<string>();
  return messages.map((message, index): ChatMessage => {
    const at = `messages[${index}]`;
    const content = messageText(message, index);
    if (message.tool_calls !== undefined && message.role !== 'assistant') throw invalid(`Only assistant messages may have tool_calls.`, `${at}.tool_calls`);
    if (message.tool_call_id !== undefined && message.role !== 'tool') throw invalid(`Only tool messages may have a tool_call_id.`, `${at}.tool_call_id`);
    for (const field of ['reasoning_content', 'reasoning'] as const) {
      if (message[field] !== undefined && message.role !== 'assistant') throw invalid(`Only assistant messages may have ${field}.`, `${at}.${field}`);
    }
    const hasContent = message.content !== null && message.content !== undefined;
    if (!hasContent && !(message.role === 'assistant' && message.tool_calls)) {
      throw OpenAiError.invalidRequest(`Missing required parameter: '${at}.content'.`, `${at}.content`, 'missing_required_parameter');
    }
    switch (message.role) {
      case 'system':
      case 'developer':
        if (index > 0) throw invalid(`A ${message.role} message is only allowed as the first message.`, `${at}.role`);
        return { role: 'system', content };
      case 'user':
        return { role: 'user', content };
      case 'assistant': {
        const toolCalls = message.tool_calls?.map((call): ToolCall => ({ id: call.id, name: call.function.name, arguments: call.function.arguments }));
        for (const call of toolCalls ?? []) calledIds.add(call.id);
        const reasoning = message.reasoning_content ?? message.reasoning;
        return { role: 'assistant', content, ...(toolCalls ? { toolCalls } : {}), ...(reasoning ? { reasoning } : {}) };
      }
      case 'tool': {
        const id = message.tool_call_id;
        if (id === undefined) {
          throw OpenAiError.invalidRequest(`Missing required parameter: '${at}.tool_call_id'.`, `${at}.tool_call_id`, 'missing_required_parameter');
        }
        if (!calledIds.has(id))
          throw invalid(`'${at}.tool_call_id' (${id}) does not answer a tool call of an earlier assistant message.`, `${at}.tool_call_id`);
        return { role: 'tool', content, toolCallId: id };
      }
    }
  });
}
