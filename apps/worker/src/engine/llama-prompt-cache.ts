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
}

/**
 * Which idle sequence a prompt runs on, and how many of its first tokens that sequence holds
 * already (LlamaChat evaluates only the rest). `sequences` are in the order they fell idle. A
 * sequence keeps the reusable start of its last prompt (see `sharedStart`): the longest one that
 * the new prompt begins with wins, or an empty one. Else the one sharing the most with the prompt,
 * the one idle longest among equals, whose other state LlamaChat erases first (that waits on the
 * context's batch loop, so it is the last choice). A sequence reserved for a job's next choice
 * serves that prompt, and another only when every idle sequence is reserved.
 */
export function pickSequence(sequences: readonly HeldTokens[], prompt: readonly Token[]): { index: number; cachedTokens: number } {
  const nextChoiceOf = ({ contextTokens }: HeldTokens) => contextTokens.length === prompt.length - 1 && commonPrefixLength(contextTokens, prompt) === contextTokens.length;
  const open = [...sequences.entries()].filter(([, sequence]) => !sequence.reserved || nextChoiceOf(sequence));
  const candidates = open.length > 0 ? open : [...sequences.entries()];
  let best = { index: -1, cachedTokens: -1 };
  for (const [index, { contextTokens }] of candidates) {
    const held = contextTokens.length;
    // LlamaChat evaluates at least the prompt's last token itself.
    const reusable = held < prompt.length && commonPrefixLength(contextTokens, prompt) === held;
    if (reusable && held > best.cachedTokens) best = { index, cachedTokens: held };
  }
  if (best.index >= 0) return best;
  // LlamaChat still reuses what the sequence shares with the prompt.
  for (const [index, { contextTokens }] of candidates) {
    const shared = Math.min(commonPrefixLength(contextTokens, prompt), prompt.length - 1);
    if (shared > best.cachedTokens) best = { index, cachedTokens: shared };
  }
  return best;
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
