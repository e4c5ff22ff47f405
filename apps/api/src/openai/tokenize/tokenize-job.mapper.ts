import type { JobInputOf, TokenizeOptions } from '@app/contracts';
import { OpenAiError } from '../../errors/openai-error';
import { toChatMessages } from '../common/chat-messages';
import type { DetokenizeRequestDto, TokenizeRequestDto } from './tokenize-request.dto';

const unsupported = (message: string, param: string): OpenAiError => OpenAiError.invalidRequest(message, param, 'unsupported_parameter');

/**
 * A conversation, as its chat completion's prompt: the chat template renders it up to where the
 * answer starts (vLLM's `add_generation_prompt`, which is all the worker renders), its special
 * tokens its own.
 */
function conversationOptions(request: TokenizeRequestDto, messages: NonNullable<TokenizeRequestDto['messages']>): TokenizeOptions {
  if (request.prompt !== undefined) throw OpenAiError.invalidRequest("Send either 'prompt' or 'messages', not both.", 'prompt', 'invalid_value');
  if (request.add_generation_prompt === false) {
    throw unsupported("'add_generation_prompt' false is not supported: a conversation is counted as its chat completion's prompt.", 'add_generation_prompt');
  }
  if (request.add_special_tokens === true) {
    throw unsupported("'add_special_tokens' with 'messages' is not supported: the chat template adds the model's special tokens itself.", 'add_special_tokens');
  }
  return { of: 'conversation', conversation: { messages: toChatMessages(messages) } };
}

/** What to tokenize, as vLLM's `/tokenize` takes it: text, or a conversation (tools are counted with POST /v1/responses/input_tokens). */
function tokenizeOptions(request: TokenizeRequestDto): TokenizeOptions {
  if (request.messages !== undefined) return conversationOptions(request, request.messages);
  if (request.add_generation_prompt !== undefined) throw unsupported("'add_generation_prompt' goes with 'messages'.", 'add_generation_prompt');
  if (request.prompt === undefined) throw OpenAiError.invalidRequest("'prompt' is required: the text to tokenize.", 'prompt', 'missing_required_parameter');
  return { of: 'text', text: request.prompt, specialTokens: request.add_special_tokens ?? true };
}

/** The `tokenize` job a request becomes: text to tokens (`/tokenize`) or tokens to text (`/detokenize`). */
export function toTokenizeJob(
  request: TokenizeRequestDto | DetokenizeRequestDto,
  id: string,
  acceptedAt: number,
  maxQueueWaitMs: number,
): JobInputOf<'tokenize'> {
  const options: TokenizeOptions = 'tokens' in request ? { of: 'tokens', tokens: request.tokens } : tokenizeOptions(request);
  return { kind: 'tokenize', id, model: request.model, options, schedule: { acceptedAt, startDeadline: acceptedAt + maxQueueWaitMs } };
}
