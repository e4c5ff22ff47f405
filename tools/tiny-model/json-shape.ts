/**
 * What the tiny model prefers when a grammar forces it to write JSON.
 *
 * Plain answers never contain JSON punctuation: every plain state gives those
 * tokens a probability about e^-25 below its words. Under a grammar the words
 * are forbidden, so the sampler is left with exactly these low-probability
 * tokens, and their order here decides the shape: compact JSON, short strings
 * of made-up words, small numbers, and closing brackets more likely than
 * commas so that free-form JSON (json_object) ends quickly, also greedily.
 */
import { SPACE } from './vocabulary';

/** States that only JSON (or tool-call markup) reaches; plain text never does. */
export const JSON_STATE = {
  quote: '<json:quote>',
  openObject: '<json:open-object>',
  closeObject: '<json:close-object>',
  openArray: '<json:open-array>',
  closeArray: '<json:close-array>',
  digit: '<json:digit>',
  minus: '<json:minus>',
  literal: '<json:literal>',
  word: '<json:word>',
} as const;

/** Plain punctuation states that JSON also passes through; added when the corpus lacks them. */
export const JSON_PUNCTUATION = [',', ':', '.'] as const;

/** How far below a plain state's own tokens its JSON fallbacks sit (natural log). */
export const JSON_FALLBACK_OFFSET = -25;

export const DIGITS = Array.from('0123456789');
/**
 * A string's closing quote fused with what follows it. One `"` token cannot tell
 * an opening quote from a closing one, and inside a string `:`, `,`, `}` and `]`
 * are ordinary characters: after a lone `"` the model must write words, so it
 * closes strings with these instead.
 */
export const CLOSING_QUOTES = new Map<string, string>([
  ['":', ':'],
  ['",', ','],
  ['"}', JSON_STATE.closeObject],
  ['"]', JSON_STATE.closeArray],
]);
export const LITERALS = ['true', 'false', 'null'] as const;

/** Readable string content; words that the corpus already has are dropped (a token has one state). */
const WORD_CANDIDATES = [
  'red',
  'blue',
  'green',
  'gold',
  'cat',
  'dog',
  'owl',
  'fox',
  'tea',
  'cake',
  'jam',
  'pie',
  'moon',
  'sun',
  'star',
  'rose',
  'key',
  'box',
  'hat',
  'cup',
] as const;

export function jsonWords(corpusWords: readonly string[]): string[] {
  const taken = new Set(corpusWords.map((w) => w.toLowerCase()));
  const words = WORD_CANDIDATES.filter((w) => !taken.has(w));
  if (words.length < 4) throw new Error('too few JSON words left after removing corpus words');
  return words;
}

/** Single tokens that JSON is written with, mapped to the state each one leads to. */
export function jsonTokenStates(words: readonly string[]): Map<string, string> {
  const states = new Map<string, string>([
    ['"', JSON_STATE.quote],
    ['{', JSON_STATE.openObject],
    ['}', JSON_STATE.closeObject],
    ['[', JSON_STATE.openArray],
    [']', JSON_STATE.closeArray],
    ['-', JSON_STATE.minus],
  ]);
  for (const [text, state] of CLOSING_QUOTES) states.set(text, state);
  for (const d of DIGITS) states.set(d, JSON_STATE.digit);
  for (const l of LITERALS) states.set(l, JSON_STATE.literal);
  for (const w of words) {
    states.set(w, JSON_STATE.word);
    states.set(SPACE + w, JSON_STATE.word);
  }
  return states;
}

type Distribution = Map<string, number>;

/** Probability of a token that only a grammar should ever leave as the sole choice. */
const UNLIKELY = 1e-7;

function spread(tokens: readonly string[], total: number): Array<[string, number]> {
  return tokens.map((t) => [t, total / tokens.length]);
}

function valueStart(): Distribution {
  return new Map<string, number>([
    ['"', 0.45],
    ...spread(DIGITS.slice(1), 0.18),
    ['0', 0.03],
    ['-', 0.01],
    ['true', 0.07],
    ['false', 0.07],
    ['null', 0.03],
    ['{', 0.08],
    ['[', 0.08],
  ]);
}

/** After a complete value: close the container (or the answer) before adding another item. */
function afterValue(): Distribution {
  return new Map<string, number>([
    ['}', 0.3],
    [']', 0.3],
    [',', 0.25],
    ['<|im_end|>', 0.15],
  ]);
}

/**
 * JSON next-token distributions by state name. States with a plain distribution
 * too (START and punctuation) get these JSON_FALLBACK_OFFSET lower.
 */
export function jsonDistributions(words: readonly string[], startState: string): Map<string, Distribution> {
  const digitNext = new Map<string, number>([...afterValue()].map(([t, p]) => [t, p * 0.7]));
  for (const [t, p] of spread(DIGITS, 0.25)) digitNext.set(t, p);
  digitNext.set('.', 0.05);
  return new Map<string, Distribution>([
    [startState, new Map<string, number>([...valueStart(), ['{', 0.6]])],
    [',', valueStart()],
    [':', valueStart()],
    ['.', new Map(spread(DIGITS, 1))],
    [
      JSON_STATE.openObject,
      new Map([
        ['"', 0.9],
        ['}', 0.1],
      ]),
    ],
    [JSON_STATE.openArray, new Map([...valueStart(), [']', 0.1]])],
    [JSON_STATE.closeObject, afterValue()],
    [JSON_STATE.closeArray, afterValue()],
    [JSON_STATE.literal, afterValue()],
    [JSON_STATE.digit, digitNext],
    [JSON_STATE.minus, new Map(spread(DIGITS.slice(1), 1))],
    // Mostly an opening quote: words. When the grammar says it closed a string
    // (a forced enum value or key), only the near-zero punctuation is left.
    [JSON_STATE.quote, new Map<string, number>([...spread(words, 0.97 - 4 * UNLIKELY), ['"', 0.03], ...spread([':', ',', '}', ']'], 4 * UNLIKELY)])],
    [
      JSON_STATE.word,
      new Map<string, number>([
        // Closing beats continuing, so greedy decoding ends containers too.
        ['"}', 0.2],
        ['"]', 0.2],
        ['":', 0.15],
        ['",', 0.1],
        ['"', 0.05],
        ...spread(
          words.map((w) => SPACE + w),
          0.3,
        ),
      ]),
    ],
  ]);
}
