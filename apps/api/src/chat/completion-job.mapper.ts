import type { ChatMessage, CompletionJobData } from '@app/contracts';
import { randomInt } from 'node:crypto';
import { OpenAiError } from '../errors/openai-error';
import type { ChatCompletionRequestDto, ChatMessageDto } from './chat-completion-request.dto';
import { contentText } from './message-content.validator';
import { stopList } from './stop-sequences.validator';

/** One message's text may not exceed this (the body limit bounds the sum). */
export const MAX_MESSAGE_CHARS = 256 * 1024;

function toChatMessages(messages: ChatMessageDto[]): ChatMessage[] {
  return messages.map((message, index) => {
    const content = contentText(message.content);
    if (content.length > MAX_MESSAGE_CHARS) {
      throw OpenAiError.tooLarge(`A message may hold at most ${MAX_MESSAGE_CHARS} characters.`, `messages[${index}].content`);
    }
    const isSystem = message.role === 'system' || message.role === 'developer';
    if (isSystem && index > 0) {
      throw OpenAiError.invalidRequest(
        `A ${message.role} message is only allowed as the first message.`,
        `messages[${index}].role`,
        'invalid_value',
      );
    }
    return { role: isSystem ? 'system' : (message.role as 'user' | 'assistant'), content };
  });
}

function maxTokens(request: ChatCompletionRequestDto): number | undefined {
  const { max_tokens: legacy, max_completion_tokens: current } = request;
  if (legacy !== undefined && current !== undefined && legacy !== current) {
    throw OpenAiError.invalidRequest(
      'max_tokens and max_completion_tokens disagree; send only max_completion_tokens.',
      'max_tokens',
      'invalid_value',
    );
  }
  return current ?? legacy;
}

/** A validated request becomes the job a worker runs, with OpenAI's defaults filled in. */
export function toCompletionJob(
  request: ChatCompletionRequestDto,
  completionId: string,
  acceptedAt: number,
  maxQueueWaitMs: number,
): CompletionJobData {
  return {
    completionId,
    model: request.model,
    messages: toChatMessages(request.messages),
    sampling: {
      temperature: request.temperature ?? 1,
      topP: request.top_p ?? 1,
      maxTokens: maxTokens(request),
      stop: stopList(request.stop),
      frequencyPenalty: request.frequency_penalty ?? 0,
      presencePenalty: request.presence_penalty ?? 0,
      // llama.cpp takes a 32-bit seed; OpenAI's are any integer. Without one, answers must still vary.
      seed: request.seed === undefined ? randomInt(2 ** 32) : request.seed >>> 0,
    },
    acceptedAt,
    startDeadline: acceptedAt + maxQueueWaitMs,
  };
}
