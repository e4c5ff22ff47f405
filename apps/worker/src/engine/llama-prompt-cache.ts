import type { Token } from 'node-llama-cpp' with { 'resolution-mode': 'import' };

export function commonPrefixLength(a: readonly Token[], b: readonly Token[]): number {
  let length = 0;
  while (length < a.length && length < b.length && a[length] === b[length]) length++;
  return length;
}

/** What an idle sequence holds in its context: the tokens a job left there. */
export interface HeldTokens {
  readonly contextTokens: readonly Token[];
  /** It holds the prompt of a running job's next choice (`n` > 1): other prompts take it last. */
  readonly reserved?: boolean;
  /** How many of the sequences next to it by id generate now (see busyNeighbours). */
  readonly busyNeighbours?: number;
}

/**
 * For each idle sequence (by position, the sequence id), how many of the two next to it generate
 * now. llama.cpp makes one pass through the model per run of consecutive busy ids at each step
 * (see llama-batching.ts): taking a sequence with two busy neighbours joins two runs into one,
 * with one it lengthens a run, with none it adds a pass to every step until a job ends.
 */
export function busyNeighbours(idlePositions: readonly number[], slots: number): number[] {
  const idle = new Set(idlePositions);
  const busy = (position: number) => position >= 0 && position < slots && !idle.has(position);
  return idlePositions.map((position) => Number(busy(position - 1)) + Number(busy(position + 1)));
}

/**
 * How much more of a prompt a sequence holding another conversation must share than one that
 * loses nothing (an empty one, or one holding only a start of the prompt) for it to be taken and
 * its other state erased: llama.cpp's server takes a slot by similarity only above 10% of the
 * prompt too (its slot_prompt_similarity), else the least recently used.
 */
export const TAKEOVER_MARGIN = 0.1;

/**
 * Which idle sequence a prompt runs on, and how many of its first tokens that sequence holds
 * already (LlamaChat evaluates only the rest). `sequences` are in the order they fell idle. A
 * finished job's sequence keeps its conversation, answer included, so the next turn shares all
 * of it but the tokens that render differently (past a stop sequence, a tool call's syntax).
 * Lossless candidates hold only a start of the prompt (or nothing): the longest wins. A sequence
 * holding more than it shares (another conversation, or this one's answer as generated) wins
 * instead when it shares at least TAKEOVER_MARGIN of the prompt more; among equals the one idle
 * longest, whose other state LlamaChat erases first. Among sequences sharing as much, the one with
 * more busy neighbours goes first, so that the answers generating at once keep sharing each pass
 * through the model; a longer shared start still wins, as it spares a pass over the tokens it
 * holds. A sequence reserved for a job's next choice serves that prompt, and another only when
 * every idle sequence is reserved.
 */
export function pickSequence(sequences: readonly HeldTokens[], prompt: readonly Token[]): { index: number; cachedTokens: number } {
  const nextChoiceOf = ({ contextTokens }: HeldTokens) =>
    contextTokens.length === prompt.length - 1 && commonPrefixLength(contextTokens, prompt) === contextTokens.length;
  const open = [...sequences.entries()].filter(([, sequence]) => !sequence.reserved || nextChoiceOf(sequence));
  const candidates = open.length > 0 ? open : [...sequences.entries()];
  const none = { index: -1, cachedTokens: -1, neighbours: -1 };
  let [lossless, lossy] = [none, none];
  const better = (found: typeof none, best: typeof none) =>
    found.cachedTokens > best.cachedTokens || (found.cachedTokens === best.cachedTokens && found.neighbours > best.neighbours);
  for (const [index, { contextTokens, busyNeighbours: neighbours = 0 }] of candidates) {
    // LlamaChat evaluates at least the prompt's last token itself.
    const found = { index, cachedTokens: Math.min(commonPrefixLength(contextTokens, prompt), prompt.length - 1), neighbours };
    if (found.cachedTokens === contextTokens.length) {
      if (better(found, lossless)) lossless = found;
    } else if (better(found, lossy)) lossy = found;
  }
  const { index, cachedTokens } = lossless.index >= 0 && lossy.cachedTokens - lossless.cachedTokens < TAKEOVER_MARGIN * prompt.length ? lossless : lossy;
  return { index, cachedTokens };
}

/**
 * How much of a prompt to keep in its sequence once its job ends: the part a rendering of the
 * start of its history alone (`preamble`) begins it with, e.g. the template's start, system
 * prompts and tool definitions, which the next requests of the same application share, or the
 * conversation up to a cache breakpoint. The answer and the rest of the prompt go at once, while
 * the batch loop is free, so that the next job does not wait to erase them.
 */
export function sharedStart(prompt: readonly Token[], preamble: readonly Token[]): number {
  return Math.min(commonPrefixLength(prompt, preamble), prompt.length - 1);
}
