import type { GenerationOptions } from './generation-options';

/**
 * What a `tokenize` job asks of the model's tokenizer, which only a worker has: text as the
 * tokenizer reads it (`specialTokens`: the start token the model adds, and special tokens'
 * text read as those tokens), a conversation as the chat template renders it for an answer (its
 * tools included: what a generate job of it would evaluate), or token ids back to text.
 */
export type TokenizeOptions =
  | { of: 'text'; text: string; specialTokens: boolean }
  | { of: 'conversation'; conversation: Pick<GenerationOptions, 'messages' | 'tools' | 'thinking'> }
  | { of: 'tokens'; tokens: number[] };
