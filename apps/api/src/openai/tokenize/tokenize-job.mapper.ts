import type { JobInputOf, TokenizeOptions } from '@app/contracts';
import { OpenAiError } from '../../errors/openai-error';
import type { DetokenizeRequestDto, TokenizeRequestDto } from './tokenize-request.dto';

/** What to tokenize, as vLLM's `/tokenize` takes it for text; a conversation is counted where its protocol is. */
function tokenizeOptions(request: TokenizeRequestDto): TokenizeOptions {
  if (request.messages !== undefined) {
    throw OpenAiError.invalidRequest(
      "'messages' is not taken here: count a conversation, tools included, with POST /v1/responses/input_tokens.",
      'messages',
      'unsupported_parameter',
    );
  }
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
