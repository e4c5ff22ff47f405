import { chars, choice, literal, optional, sequence } from './grammar-ast';
import type { GrammarNode } from './grammar-ast';
import { MAX_DIGITS, integerRange } from './integer-range';

/** A bound as JSON Schema gives it: `minimum: 3` or `exclusiveMinimum: 3`. */
export interface Bound {
  value: number;
  exclusive: boolean;
}

const digit = chars([[0x30, 0x39]]);
const repeat = (item: GrammarNode, min: number, max: number | undefined): GrammarNode => ({ kind: 'repeat', item, min, max });

/** Integers within the bounds: the bounds rounded inward, exactly. */
export function integerBounds(min: Bound | undefined, max: Bound | undefined): { min: bigint | undefined; max: bigint | undefined } {
  const lower = min === undefined ? undefined : Number.isInteger(min.value) ? BigInt(min.value) + (min.exclusive ? 1n : 0n) : BigInt(Math.ceil(min.value));
  const upper = max === undefined ? undefined : Number.isInteger(max.value) ? BigInt(max.value) - (max.exclusive ? 1n : 0n) : BigInt(Math.floor(max.value));
  return { min: lower, max: upper };
}

/**
 * Non-negative decimals `m` with `lo < m` (or `<=`) and `m < hi` (or `<=`), whole bounds, at most
 * `fractionDigits` digits after the point: the integer part in a range, and the fraction free
 * except at a bound (above an exclusive low bound it must not be zero; at an inclusive high
 * bound it must be).
 */
function magnitude(lo: bigint, loExclusive: boolean, hi: bigint | undefined, hiExclusive: boolean, fractionDigits: number): GrammarNode {
  const fraction = fractionDigits > 0 ? optional(sequence(literal('.'), repeat(digit, 1, fractionDigits))) : literal('');
  const alternatives: GrammarNode[] = [];
  const intLo = loExclusive ? lo + 1n : lo;
  const intHi = hi === undefined ? undefined : hi - 1n;
  if (intHi === undefined || intLo <= intHi) alternatives.push(sequence(integerRange(intLo, intHi), fraction));
  if (loExclusive && fractionDigits > 0 && (hi === undefined || lo < hi))
    alternatives.push(sequence(literal(`${lo}.`), repeat(digit, 0, fractionDigits - 1), chars([[0x31, 0x39]])));
  if (hi !== undefined && !hiExclusive && (loExclusive ? hi > lo : hi >= lo)) {
    alternatives.push(
      sequence(literal(hi.toString()), fractionDigits > 0 ? optional(sequence(literal('.'), repeat(literal('0'), 1, fractionDigits))) : literal('')),
    );
  }
  return choice(...alternatives);
}

/** A whole-number bound for the grammar: fractional ones rounded inward (every value kept still satisfies them). */
function wholeBound(bound: Bound | undefined, direction: 'lower' | 'upper'): { value: bigint; exclusive: boolean } | undefined {
  if (bound === undefined || Math.abs(bound.value) >= 10 ** MAX_DIGITS) return undefined;
  if (Number.isInteger(bound.value)) return { value: BigInt(bound.value), exclusive: bound.exclusive };
  return { value: BigInt(direction === 'lower' ? Math.ceil(bound.value) : Math.floor(bound.value)), exclusive: false };
}

/**
 * Numbers within the bounds, written without an exponent. Whole bounds are kept exactly;
 * a fractional bound is rounded inward to a whole one (a grammar over digits could follow it
 * further; every value it allows is within the bound either way).
 */
export function numberRange(min: Bound | undefined, max: Bound | undefined, fractionDigits = MAX_DIGITS): GrammarNode {
  const lower = wholeBound(min, 'lower');
  const upper = wholeBound(max, 'upper');
  const alternatives: GrammarNode[] = [];
  // Zero and above.
  if (upper === undefined || upper.value >= 0n) {
    const fromZero = lower === undefined || lower.value < 0n;
    alternatives.push(magnitude(fromZero ? 0n : lower.value, fromZero ? false : lower.exclusive, upper?.value, upper?.exclusive ?? false, fractionDigits));
  }
  // Below zero: the magnitude above 0 (or above -upper) and up to -lower.
  if (lower === undefined || lower.value < 0n) {
    const negativeUpper = upper !== undefined && upper.value < 0n;
    alternatives.push(
      sequence(
        literal('-'),
        magnitude(
          negativeUpper ? -upper.value : 0n,
          negativeUpper ? upper.exclusive : true,
          lower === undefined ? undefined : -lower.value,
          lower?.exclusive ?? false,
          fractionDigits,
        ),
      ),
    );
  }
  return choice(...alternatives.filter((node) => !(node.kind === 'choice' && node.items.length === 0)));
}

/** Any JSON number, as llama.cpp writes them (at most 16 digits in each part). */
export function anyNumber(): GrammarNode {
  const integral = choice(literal('0'), sequence(chars([[0x31, 0x39]]), repeat(digit, 0, MAX_DIGITS - 1)));
  return sequence(
    optional(literal('-')),
    integral,
    optional(sequence(literal('.'), repeat(digit, 1, MAX_DIGITS))),
    optional(
      sequence(
        chars([
          [0x45, 0x45],
          [0x65, 0x65],
        ]),
        optional(
          chars([
            [0x2b, 0x2b],
            [0x2d, 0x2d],
          ]),
        ),
        integral,
      ),
    ),
  );
}
