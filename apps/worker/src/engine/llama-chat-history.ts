import type { ChatMessage, ToolCall } from '@app/contracts';
import type { ChatHistoryItem, ChatModelFunctionCall, ChatModelResponse, ChatModelSegment } from 'node-llama-cpp' with { 'resolution-mode': 'import' };

/** A tool's arguments or result as the chat template renders it: JSON when it is JSON, else the text. */
function jsonOrText(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function functionCall(call: ToolCall, results: Map<string, string>, startsNewChunk: boolean): ChatModelFunctionCall {
  return { type: 'functionCall', name: call.name, params: jsonOrText(call.arguments), result: jsonOrText(results.get(call.id) ?? ''), startsNewChunk };
}

/**
 * How a reasoning template's fresh answer begins: in an open thought (as LlamaChat opens one itself
 * for templates that think from the start: given here, the prompt is rendered as it evaluates it),
 * or after an empty thought that has ended (thinking off, as llama.cpp's server does with
 * `enable_thinking: false`: the template's own closing markup, then the answer).
 */
export type AnswerStart = 'in thought' | 'after thought';

/**
 * OpenAI's messages as node-llama-cpp's chat history. An assistant message's tool calls become
 * function calls in its model response, each with the result the matching tool message gave
 * (node-llama-cpp keeps call and result together); text the assistant wrote after the results
 * continues that same response. The history ends with the model response the engine fills in:
 * a fresh one, or the last one when the conversation ends with tool results to answer.
 * A reasoning template's fresh response may begin with an empty thought (see AnswerStart).
 */
export function toChatHistory(messages: ChatMessage[], answerStart?: AnswerStart): ChatHistoryItem[] {
  const results = new Map<string, string>();
  for (const message of messages) if (message.role === 'tool') results.set(message.toolCallId, message.content);

  const history: ChatHistoryItem[] = [];
  let openResponse: ChatModelResponse | undefined;
  for (const message of messages) {
    switch (message.role) {
      case 'system':
      case 'user':
        history.push({ type: message.role, text: message.content });
        openResponse = undefined;
        break;
      case 'assistant': {
        const calls = (message.toolCalls ?? []).map((call, index) => functionCall(call, results, index === 0));
        // Its thinking, for templates that render it (others leave it out).
        const thought: ChatModelSegment[] = message.reasoning ? [{ type: 'segment', segmentType: 'thought', text: message.reasoning, ended: true }] : [];
        const items = [...thought, ...(message.content === '' ? [] : [message.content]), ...calls];
        if (openResponse) openResponse.response.push(...items);
        else history.push((openResponse = { type: 'model', response: items }));
        // After tool calls the same response goes on (with their results); after text it is done.
        if (calls.length === 0) openResponse = undefined;
        break;
      }
      case 'tool':
        break; // carried as the result of its call
    }
  }
  if (!openResponse)
    history.push({
      type: 'model',
      response: answerStart ? [{ type: 'segment', segmentType: 'thought', text: '', ended: answerStart === 'after thought' }] : [],
    });
  return history;
}
