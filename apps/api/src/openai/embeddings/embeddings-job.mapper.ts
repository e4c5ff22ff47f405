import type { EmbeddingInput, JobInputOf } from '@app/contracts';
import { OpenAiError } from '../../errors/openai-error';
import { MAX_MESSAGE_CHARS } from '../common/request-limits';
import type { EmbeddingsRequestDto } from './embeddings-request.dto';

/** Token ids one request may send, over all its inputs (OpenAI's bound on tokens per request). */
export const MAX_EMBEDDING_REQUEST_TOKENS = 300_000;

/** The request's inputs as a list: one string, or one array of token ids, is one input. */
export function inputsOf(input: EmbeddingsRequestDto['input']): EmbeddingInput[] {
  if (typeof input === 'string') return [input];
  if (input.length > 0 && input.every((item) => typeof item === 'number')) return [input];
  return input as EmbeddingInput[];
}

/** Refuses what OpenAI refuses: no input, an empty one, one too long; each 400 names the input. */
function checkInputs(inputs: EmbeddingInput[], single: boolean): void {
  if (inputs.length === 0) throw OpenAiError.invalidRequest(`'input' must hold at least one input.`, 'input', 'invalid_value');
  const param = (index: number): string => (single ? 'input' : `input[${index}]`);
  for (const [index, input] of inputs.entries()) {
    if (input.length === 0)
      throw OpenAiError.invalidRequest(`'${param(index)}' is empty: every input must hold text or tokens.`, param(index), 'invalid_value');
    if (typeof input === 'string' && input.length > MAX_MESSAGE_CHARS) {
      throw OpenAiError.invalidRequest(`'${param(index)}' is longer than ${MAX_MESSAGE_CHARS} characters.`, param(index), 'string_above_max_length');
    }
  }
  const tokens = inputs.reduce((sum, input) => sum + (typeof input === 'string' ? 0 : input.length), 0);
  if (tokens > MAX_EMBEDDING_REQUEST_TOKENS) {
    throw OpenAiError.invalidRequest(`'input' holds ${tokens} tokens; one request may hold at most ${MAX_EMBEDDING_REQUEST_TOKENS}.`, 'input', 'invalid_value');
  }
}

/** The `embed` job an embeddings request becomes. */
export function toEmbeddingJob(request: EmbeddingsRequestDto, id: string, acceptedAt: number, maxQueueWaitMs: number): JobInputOf<'embed'> {
  if (request.dimensions !== undefined) {
    throw OpenAiError.invalidRequest(`The model '${request.model}' does not support specifying dimensions.`, 'dimensions', 'unsupported_parameter');
  }
  const { input } = request;
  // One string, or one array of token ids: its errors name `input` itself.
  checkInputs(inputsOf(input), typeof input === 'string' || input.every((item) => typeof item === 'number'));
  const inputs = inputsOf(input);
  return {
    kind: 'embed',
    id,
    model: request.model,
    options: { inputs },
    schedule: { acceptedAt, startDeadline: acceptedAt + maxQueueWaitMs },
  };
}
