import { chars, choice, literal, sequence } from './grammar-ast';
import type { GrammarNode } from './grammar-ast';

/**
 * Integers between bounds, exactly, as digits: llama.cpp's `build_min_max_int`
 * (common/json-schema-to-grammar.cpp) in bigint, with its handling of a minimum whose later
 * digits start with zeros corrected (it read "05" as 5, so a minimum of 105 let 15 through).
 * Integers have at most MAX_DIGITS digits, as llama.cpp writes them.
 */
export const MAX_DIGITS = 16;

const code = (c: string): number => c.charCodeAt(0);
const digits = (from: string, to: string): GrammarNode => chars([[code(from), code(to)]]);
const shift = (c: string, by: number): string => String.fromCharCode(code(c) + by);
const moreDigits = (min: number, max: number): GrammarNode => ({ kind: 'repeat', item: digits('0', '9'), min, max: Math.max(min, max) });

/** Digit strings of one length from `from` to `to` (both that long). */
function uniformRange(from: string, to: string): GrammarNode {
  let i = 0;
  while (i < from.length && from[i] === to[i]) i++;
  const parts: GrammarNode[] = [];
  if (i > 0) parts.push(literal(from.slice(0, i)));
  if (i < from.length) {
    const rest = from.length - i - 1;
    if (rest > 0) {
      const fromRest = from.slice(i + 1);
      const toRest = to.slice(i + 1);
      const zeros = '0'.repeat(rest);
      const nines = '9'.repeat(rest);
      const alternatives: GrammarNode[] = [];
      let toReached = false;
      if (fromRest === zeros) alternatives.push(sequence(digits(from[i], shift(to[i], -1)), moreDigits(rest, rest)));
      else {
        alternatives.push(sequence(literal(from[i]), uniformRange(fromRest, nines)));
        if (code(from[i]) < code(to[i]) - 1) {
          if (toRest === nines) {
            alternatives.push(sequence(digits(shift(from[i], 1), to[i]), moreDigits(rest, rest)));
            toReached = true;
          } else alternatives.push(sequence(digits(shift(from[i], 1), shift(to[i], -1)), moreDigits(rest, rest)));
        }
      }
      if (!toReached) alternatives.push(sequence(literal(to[i]), uniformRange(zeros, toRest)));
      parts.push(choice(...alternatives));
    } else parts.push(digits(from[i], to[i]));
  }
  return sequence(...parts);
}

/** Digit strings for values of at least `min` (given as digits; inner ones may start with zeros). */
function atLeast(min: string, digitsLeft: number, topLevel: boolean): GrammarNode {
  const fewer = Math.max(digitsLeft - 1, 1);
  const start = topLevel ? '1' : '0';
  if (min.length === 1) {
    if (min === '0') return topLevel ? choice(literal('0'), sequence(digits('1', '9'), moreDigits(0, fewer))) : moreDigits(1, digitsLeft);
    const alternatives: GrammarNode[] = [];
    if (min > start) alternatives.push(sequence(digits(start, shift(min, -1)), moreDigits(1, fewer)));
    alternatives.push(sequence(digits(min, '9'), moreDigits(0, fewer)));
    return choice(...alternatives);
  }
  const first = min[0];
  const alternatives: GrammarNode[] = [];
  if (first > start) alternatives.push(sequence(digits(start, shift(first, -1)), moreDigits(min.length, fewer)));
  alternatives.push(sequence(literal(first), atLeast(min.slice(1), fewer, false)));
  if (first < '9') alternatives.push(sequence(digits(shift(first, 1), '9'), moreDigits(min.length - 1, fewer)));
  return choice(...alternatives);
}

function between(min: bigint, max: bigint): GrammarNode {
  if (min < 0n && max < 0n) return sequence(literal('-'), between(-max, -min));
  const alternatives: GrammarNode[] = [];
  if (min < 0n) {
    alternatives.push(sequence(literal('-'), between(1n, -min)));
    min = 0n;
  }
  let from = min.toString();
  const to = max.toString();
  for (let length = from.length; length < to.length; length++) {
    alternatives.push(uniformRange(from, '9'.repeat(length)));
    from = `1${'0'.repeat(length)}`;
  }
  alternatives.push(uniformRange(from, to));
  return choice(...alternatives);
}

/** The largest magnitude MAX_DIGITS digits hold: a bound beyond it bounds nothing. */
const LIMIT = 10n ** BigInt(MAX_DIGITS) - 1n;

/** Integers from `min` to `max` (either may be absent), as JSON writes them. */
export function integerRange(min: bigint | undefined, max: bigint | undefined): GrammarNode {
  if (min !== undefined && min < -LIMIT) min = undefined;
  if (max !== undefined && max > LIMIT) max = undefined;
  const anyLength = (): GrammarNode => choice(literal('0'), sequence(digits('1', '9'), moreDigits(0, MAX_DIGITS - 1)));
  if (min !== undefined && max !== undefined) return between(min, max);
  if (min !== undefined) {
    if (min >= 0n) return atLeast(min.toString(), MAX_DIGITS, true);
    return choice(sequence(literal('-'), between(1n, -min)), anyLength());
  }
  if (max !== undefined) {
    if (max >= 0n) return choice(sequence(literal('-'), digits('1', '9'), moreDigits(0, MAX_DIGITS - 1)), between(0n, max));
    return sequence(literal('-'), atLeast((-max).toString(), MAX_DIGITS, true));
  }
  return sequence(optionalMinus(), anyLength());
}

const optionalMinus = (): GrammarNode => ({ kind: 'repeat', item: literal('-'), min: 0, max: 1 });
