import type { GenerateJobInput, PromptInput } from '@app/contracts';
import { OpenAiError } from '../../errors/openai-error';
import { logitBiasList } from '../common/field-validators';
import { generationJob, samplingSeed } from '../common/generation-job';
import { MAX_MESSAGE_CHARS } from '../common/request-limits';
import { stopList } from '../common/stop-sequences.validator';
import { MAX_PROMPTS } from './text-completion-request.dto';
import type { TextCompletionRequestDto } from './text-completion-request.dto';

/** Tokens an answer may have when the request sets no max_tokens (OpenAI's legacy default). */
export const DEFAULT_MAX_TOKENS = 16;

/** The request's prompts as a list: one string, or one array of token ids, is one prompt. */
export function promptsOf(prompt: TextCompletionRequestDto['prompt']): PromptInput[] {
  if (typeof prompt === 'string') return [prompt];
  if (prompt.length > 0 && prompt.every((item) => typeof item === 'number')) return [prompt];
  return prompt as PromptInput[];
}

const invalid = (message: string, param: string, code = 'invalid_value'): OpenAiError => OpenAiError.invalidRequest(message, param, code);

/** No prompt, an empty one, too many or one too long: each a 400 naming the prompt (`prompt[i]` of several). */
function checkPrompts(prompts: PromptInput[], single: boolean): void {
  if (prompts.length === 0) throw invalid(`'prompt' must hold at least one prompt.`, 'prompt');
  if (prompts.length > MAX_PROMPTS) throw invalid(`'prompt' holds ${prompts.length} prompts; one request may hold at most ${MAX_PROMPTS}.`, 'prompt');
  const param = (index: number): string => (single ? 'prompt' : `prompt[${index}]`);
  for (const [index, prompt] of prompts.entries()) {
    if (prompt.length === 0) throw invalid(`'${param(index)}' is empty: every prompt must hold text or tokens.`, param(index));
    if (typeof prompt === 'string' && prompt.length > MAX_MESSAGE_CHARS) {
      throw invalid(`'${param(index)}' is longer than ${MAX_MESSAGE_CHARS} characters.`, param(index), 'string_above_max_length');
    }
  }
}

/**
 * What cannot be honoured: a suffix with an echo (the answer is in the middle, not after the
 * prompt), or best_of keeping fewer answers than it generates. A model without FIM tokens is
 * refused a suffix at admission, which knows the model's engines.
 */
function refuseUnhonoured(request: TextCompletionRequestDto): void {
  if (request.suffix && request.echo === true) {
    throw invalid(`'suffix' cannot be combined with 'echo': the answer goes between the prompt and the suffix.`, 'suffix', 'invalid_value');
  }
  const n = request.n ?? 1;
  if (request.best_of !== undefined && request.best_of !== n) {
    throw invalid(
      `'best_of' must equal 'n' (${n}) here: every answer generated is answered, none is picked by its log probability.`,
      'best_of',
      'unsupported_value',
    );
  }
}

/** The `generate` job of plain prompts a legacy completions request becomes: no chat template, each prompt answered `n` times. */
export function toTextCompletionJob(request: TextCompletionRequestDto, id: string, acceptedAt: number, maxQueueWaitMs: number): GenerateJobInput {
  refuseUnhonoured(request);
  const { prompt } = request;
  const inputs = promptsOf(prompt);
  checkPrompts(inputs, typeof prompt === 'string' || prompt.every((item) => typeof item === 'number'));
  return generationJob({
    id,
    request,
    messages: [],
    // An empty suffix is no suffix, as OpenAI reads it.
    prompt: { inputs, echo: request.echo === true, ...(request.suffix ? { suffix: request.suffix } : {}) },
    sampling: {
      maxTokens: request.max_tokens ?? DEFAULT_MAX_TOKENS,
      stop: stopList(request.stop),
      seed: samplingSeed(request.seed),
      logitBias: logitBiasList(request.logit_bias),
    },
    responseFormat: { type: 'text' },
    logprobs: request.logprobs === undefined ? undefined : { top: request.logprobs },
    choices: request.n,
    conflictParams: { format: 'response_format', logprobs: 'logprobs' },
    acceptedAt,
    maxQueueWaitMs,
  });
}
