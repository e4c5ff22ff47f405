/**
 * Turns a plain English text into the statistics of a word-level bigram model:
 * the distinct words, which items follow which, and how sentences start.
 */

/** Punctuation kept as tokens of their own; other symbols are dropped. */
export const PUNCTUATION = ['.', ',', '!', '?', ';', ':'] as const;
/** After these, the model may end its answer (EOS) or start a new sentence. */
export const SENTENCE_END = ['.', '!', '?'] as const;

export interface CorpusAnalysis {
  /** Distinct words (case kept), sorted by code point. */
  readonly words: readonly string[];
  /** Distinct punctuation marks present, in PUNCTUATION order. */
  readonly punctuation: readonly string[];
  /** Sentence-initial word -> count (capitalised ones only, when any exist). */
  readonly starters: ReadonlyMap<string, number>;
  /** Item -> following item -> count, for every adjacent pair in the text. */
  readonly follows: ReadonlyMap<string, ReadonlyMap<string, number>>;
  /** The text as a sequence of words and punctuation marks. */
  readonly items: readonly string[];
}

export function isPunctuation(item: string): boolean {
  return (PUNCTUATION as readonly string[]).includes(item);
}

export function isSentenceEnd(item: string): boolean {
  return (SENTENCE_END as readonly string[]).includes(item);
}

/**
 * Words are runs of ASCII letters with inner apostrophes ("they'll");
 * hyphens and dashes split words; quotes and brackets are dropped so
 * generated text never has unbalanced ones.
 */
export function splitItems(text: string): string[] {
  const normalised = text.replace(/[\u2018\u2019]/g, "'").replace(/[-\u2013\u2014]/g, ' ');
  return normalised.match(/[A-Za-z]+(?:'[A-Za-z]+)*|[.,!?;:]/g) ?? [];
}

function increment<K>(map: Map<K, number>, key: K): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

function sortedByKey<V>(map: Map<string, V>): Map<string, V> {
  return new Map([...map.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

export function analyseCorpus(text: string): CorpusAnalysis {
  const items = splitItems(text);
  const wordSet = new Set(items.filter((i) => !isPunctuation(i)));
  if (wordSet.size === 0) throw new Error('corpus contains no words');

  const allStarters = new Map<string, number>();
  const follows = new Map<string, Map<string, number>>();
  items.forEach((item, i) => {
    const prev = i === 0 ? undefined : items[i - 1];
    if (!isPunctuation(item) && (prev === undefined || isSentenceEnd(prev))) increment(allStarters, item);
    if (prev !== undefined) {
      const next = follows.get(prev) ?? new Map<string, number>();
      increment(next, item);
      follows.set(prev, next);
    }
  });
  // Capitalised starters read better as the first word of an answer.
  const capitalised = new Map([...allStarters].filter(([w]) => /^[A-Z]/.test(w)));
  const starters = capitalised.size > 0 ? capitalised : allStarters;

  return {
    words: [...wordSet].sort(),
    punctuation: PUNCTUATION.filter((p) => items.includes(p)),
    starters: sortedByKey(starters),
    follows: new Map([...sortedByKey(follows)].map(([k, v]) => [k, sortedByKey(v)])),
    items,
  };
}
