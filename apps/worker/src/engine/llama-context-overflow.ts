import { ContextLengthExceededError } from './inference-engine';

/**
 * LlamaChat's words when an answer outgrows the context and dropping history cannot make room: its
 * context shift ("…did not return a history that fits the context size", "Failed to compress chat
 * history for context shift…", "The context size (N) is too small to fit the context shift size")
 * and its last resort ("The context size is too small to generate a response"). "Failed to
 * compress chat history to fit context window" (its decision helpers) is matched by the same words.
 */
const CONTEXT_OVERFLOW =
  /did not return a history that fits the context size|Failed to compress chat history|The context size is too small to generate|too small to fit the context shift size/;

export const isContextOverflow = (error: unknown): boolean => error instanceof Error && CONTEXT_OVERFLOW.test(error.message);

/**
 * The answer outgrew the context (a tool call's syntax is evaluated beyond max_tokens): LlamaChat
 * would go on from a shortened conversation, or fails. Refused as OpenAI refuses what does not fit.
 */
export const answerOutgrewContext = (contextSize: number, promptTokens: number): ContextLengthExceededError =>
  new ContextLengthExceededError(
    `This model's maximum context length is ${contextSize} tokens. However, your messages resulted in ${promptTokens} tokens, and the answer did not fit in the rest (a tool call's syntax counts too). Please reduce the length of the messages.`,
  );

/** Tokens LlamaChat needs free after the prompt to answer without shortening the history (its minFreeContextTokens, plus the first answer token). */
export const LLAMA_CHAT_MINIMUM_ROOM = 2;
