import type { CompletionJobInput } from '@app/contracts';

/** Tokens assumed for an answer whose request sets no max_tokens, until its real usage is known. */
const ASSUMED_ANSWER_TOKENS = 512;

/** About four characters a token. */
const tokensOfText = (characters: number): number => Math.ceil(characters / 4);

/** A rough count before the worker's tokenizer has seen the prompt (the inputs to embed, token ids counting as they are; or each document to rank, with its query). */
export function estimatePromptTokens(job: CompletionJobInput): number {
  if (job.kind === 'embed') {
    return job.options.inputs.reduce((sum, input) => sum + (typeof input === 'string' ? tokensOfText(input.length) : input.length), 0);
  }
  // Each document is evaluated after the query.
  if (job.kind === 'rank') return job.options.documents.reduce((sum, document) => sum + tokensOfText(job.options.query.length + document.length), 0);
  // Counting costs the worker no evaluation: it counts for little.
  if (job.kind === 'tokenize') return 1;
  return tokensOfText(job.options.messages.reduce((sum, message) => sum + message.content.length, 0));
}

/** The most the answer may take (max_tokens, or an assumed length), over all its choices; an embedding writes none. */
export function estimateAnswerTokens(job: CompletionJobInput): number {
  if (job.kind !== 'generate') return 0;
  return (job.options.sampling.maxTokens ?? ASSUMED_ANSWER_TOKENS) * (job.options.choices ?? 1);
}
