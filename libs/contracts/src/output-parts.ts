import { isFinishReason } from './completion-job';
import type { FinishReason } from './completion-job';
import { isCount, isRecord } from './value-guards';

/**
 * What an engine produces for a completion, in order: one kind per variant. New capabilities
 * (tool-call deltas, logprobs, one end per `n` choice) are new variants here, and the places
 * that switch on `type` (the event decoder, the publisher's merge, the API's formatter) are
 * where each one is handled: the compiler names them.
 */
export interface TextPart {
  type: 'text';
  /** Which of the request's choices it belongs to (0 while `n` is 1). */
  choice: number;
  text: string;
}

/**
 * A fragment of a tool call, in the order generated. The first fragment of a call carries its
 * `id` and `name`; every fragment carries the next piece of its JSON arguments.
 */
export interface ToolCallPart {
  type: 'tool_call';
  choice: number;
  /** Which call of this choice it belongs to (OpenAI's `tool_calls[].index`). */
  index: number;
  id?: string;
  name?: string;
  arguments: string;
}

/** One candidate token with its log probability, in OpenAI's shape (`bytes` are its UTF-8 bytes). */
export interface TopLogprob {
  token: string;
  logprob: number;
  bytes: number[];
}

/** A generated token's log probability and the most likely alternatives at its position. */
export interface TokenLogprob extends TopLogprob {
  top_logprobs: TopLogprob[];
}

/**
 * Log probabilities of a choice's generated tokens (when the request asks for `logprobs`), in
 * order: their tokens concatenate to the text parts of that choice.
 */
export interface LogprobsPart {
  type: 'logprobs';
  choice: number;
  content: TokenLogprob[];
  /**
   * An echoed prompt's first token, which nothing before it predicts (OpenAI answers it with a
   * null log probability); `content` then scores the tokens after it.
   */
  unscored?: { token: string; bytes: number[] };
}

/**
 * Text a reasoning model wrote in its thinking segment (`<think>…</think>` and the like), before
 * or between its answer's text: OpenAI-compatible servers send it as `reasoning_content`.
 */
export interface ReasoningPart {
  type: 'reasoning';
  choice: number;
  text: string;
}

/** One choice of several (`n` > 1) is complete; the others may go on. */
export interface ChoiceEndPart {
  type: 'choice_end';
  choice: number;
  finishReason: FinishReason;
}

/** An `embed` job's vector for one of its inputs (they come in any order; `index` says which). */
export interface EmbeddingPart {
  type: 'embedding';
  /** Which input it belongs to. */
  index: number;
  /** The engine's vector as it made it (not normalised), encodeVector's base64 of float32. */
  vector: string;
}

/** A `rank` job's score for one of its documents (they come in any order; `index` says which). */
export interface ScorePart {
  type: 'score';
  /** Which document it belongs to. */
  index: number;
  /** The model's relevance of the document to the query, 0 to 1. */
  score: number;
}

/** A `tokenize` job's tokens (of text or of a rendered conversation), all in one part. */
export interface TokensPart {
  type: 'tokens';
  tokens: number[];
}

/** What a `generate` job writes: text, thoughts, calls and log probabilities of its choices. */
export type GenerationPart = TextPart | ReasoningPart | ToolCallPart | LogprobsPart | ChoiceEndPart;

export type OutputPart = GenerationPart | EmbeddingPart | ScorePart | TokensPart;

const NOT_GENERATED: ReadonlySet<OutputPart['type']> = new Set(['embedding', 'score', 'tokens']);

/** Whether a part is of a generated answer (the chat and Responses doors' parts), not of an embedding, a score or a token count. */
export const isGenerationPart = (part: OutputPart): part is GenerationPart => !NOT_GENERATED.has(part.type);

/** Where an engine writes its output; the worker's publisher batches what it receives. */
export interface OutputSink {
  write(part: OutputPart): void;
}

/**
 * Appends `part` to `parts`, merging it into the last part when both continue the same thing:
 * text (or reasoning) of one choice, log probabilities of one choice, or argument fragments of one call (a
 * fragment that starts a call, with its id, is never merged into the one before).
 */
export function appendPart(parts: OutputPart[], part: OutputPart): void {
  const last = parts.at(-1);
  if (last?.type === 'text' && part.type === 'text' && last.choice === part.choice) {
    parts[parts.length - 1] = { ...last, text: last.text + part.text };
  } else if (last?.type === 'reasoning' && part.type === 'reasoning' && last.choice === part.choice) {
    parts[parts.length - 1] = { ...last, text: last.text + part.text };
  } else if (last?.type === 'logprobs' && part.type === 'logprobs' && last.choice === part.choice && part.unscored === undefined) {
    parts[parts.length - 1] = { ...last, content: [...last.content, ...part.content] };
  } else if (last?.type === 'tool_call' && part.type === 'tool_call' && last.choice === part.choice && last.index === part.index && part.id === undefined) {
    parts[parts.length - 1] = { ...last, arguments: last.arguments + part.arguments };
  } else {
    parts.push(part);
  }
}

function isTopLogprob(value: unknown): value is TopLogprob {
  return (
    isRecord(value) &&
    typeof value.token === 'string' &&
    typeof value.logprob === 'number' &&
    value.logprob <= 0 &&
    Array.isArray(value.bytes) &&
    value.bytes.every((byte) => Number.isInteger(byte) && (byte as number) >= 0 && (byte as number) <= 255)
  );
}

function isTokenLogprob(value: unknown): value is TokenLogprob {
  if (!isTopLogprob(value)) return false;
  const top: unknown = (value as { top_logprobs?: unknown }).top_logprobs;
  return Array.isArray(top) && top.every(isTopLogprob);
}

function isUnscored(value: unknown): boolean {
  return isRecord(value) && typeof value.token === 'string' && Array.isArray(value.bytes) && value.bytes.every(isCount);
}

/** Checks one part's fields by kind; anything else is rejected rather than guessed at. */
export function isOutputPart(value: unknown): value is OutputPart {
  if (!isRecord(value)) return false;
  if (value.type === 'embedding') return isCount(value.index) && typeof value.vector === 'string';
  if (value.type === 'score') return isCount(value.index) && typeof value.score === 'number' && Number.isFinite(value.score);
  if (value.type === 'tokens') return Array.isArray(value.tokens) && value.tokens.every(isCount);
  if (!isCount(value.choice)) return false;
  switch (value.type) {
    case 'text':
    case 'reasoning':
      return typeof value.text === 'string';
    case 'choice_end':
      return isFinishReason(value.finishReason);
    case 'logprobs':
      return Array.isArray(value.content) && value.content.every(isTokenLogprob) && (value.unscored === undefined || isUnscored(value.unscored));
    case 'tool_call':
      return (
        isCount(value.index) &&
        typeof value.arguments === 'string' &&
        (value.id === undefined || typeof value.id === 'string') &&
        (value.name === undefined || typeof value.name === 'string')
      );
    default:
      return false;
  }
}
