import type { CompletionJobInput } from '@app/contracts';

/** Tokens assumed for an answer whose request sets no max_tokens, until its real usage is known. */
const ASSUMED_ANSWER_TOKENS = 512;

/** A rough count before the worker's tokenizer has seen the prompt: about four characters a token. */
export function estimatePromptTokens({ options }: CompletionJobInput): number {
  const promptChars = options.messages.reduce((sum, message) => sum + message.content.length, 0);
  return Math.ceil(promptChars / 4);
}

/** The most the answer may take (max_tokens, or an assumed length), over all its choices. */
export function estimateAnswerTokens({ options }: CompletionJobInput): number {
  return (options.sampling.maxTokens ?? ASSUMED_ANSWER_TOKENS) * (options.choices ?? 1);
}
