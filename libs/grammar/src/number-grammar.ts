import type { JsonObject } from '@app/contracts';
import { choice, literal, rule, sequence } from './grammar-ast';
import type { GrammarNode } from './grammar-ast';
import type { GrammarBuild } from './grammar-build';
import { integerRange } from './integer-range';
import { textChoice } from './json-text';
import { anyNumber, integerBounds, numberRange } from './number-range';
import type { Bound } from './number-range';
import { INTEGER_FORMATS } from './string-formats';

/** The grammar of a `number` or `integer` schema: its bounds, `multipleOf` and integer formats. */
export function numberGrammar(build: GrammarBuild, type: 'number' | 'integer', schema: JsonObject, path: string): GrammarNode {
  // Draft 4 wrote exclusive bounds as booleans beside minimum / maximum.
  const minimum = bound(build, schema, 'minimum', path);
  const maximum = bound(build, schema, 'maximum', path);
  const exclusiveMinimum = bound(build, schema, 'exclusiveMinimum', path);
  const exclusiveMaximum = bound(build, schema, 'exclusiveMaximum', path);
  const lower = tighter(
    [
      minimum === undefined ? undefined : { value: minimum, exclusive: schema.exclusiveMinimum === true },
      exclusiveMinimum === undefined ? undefined : { value: exclusiveMinimum, exclusive: true },
    ],
    'lower',
  );
  const upper = tighter(
    [
      maximum === undefined ? undefined : { value: maximum, exclusive: schema.exclusiveMaximum === true },
      exclusiveMaximum === undefined ? undefined : { value: exclusiveMaximum, exclusive: true },
    ],
    'upper',
  );
  const multipleOf = bound(build, schema, 'multipleOf', path);
  if (multipleOf !== undefined && !(multipleOf > 0)) build.fail('invalid', 'multipleOf', `${path}.multipleOf`, `'multipleOf' at ${path} must be above 0.`);
  const format = typeof schema.format === 'string' ? INTEGER_FORMATS[schema.format] : undefined;
  const wholeMultiple = multipleOf !== undefined && Number.isInteger(multipleOf);
  // A fraction whose reciprocal is whole (0.5, 0.01): whole numbers are multiples of it, and
  // validators' floating-point division agrees for them (it does not for 2.3 and 0.01).
  const fractionOfOne = multipleOf !== undefined && !wholeMultiple && Number.isInteger(1 / multipleOf);
  if (type === 'integer' || format !== undefined || wholeMultiple || fractionOfOne) {
    let { min, max } = integerBounds(lower, upper);
    if (format) {
      min = min === undefined || min < format[0] ? format[0] : min;
      max = max === undefined || max > format[1] ? format[1] : max;
    }
    if (min !== undefined && max !== undefined && min > max)
      build.fail('invalid', 'minimum', path, `The bounds at ${path} leave no ${type === 'integer' ? 'integer' : 'number the grammar can write'}.`);
    if (multipleOf !== undefined && wholeMultiple && multipleOf > 1) return multiples(build, BigInt(multipleOf), min, max, path);
    if (multipleOf !== undefined && !wholeMultiple && !Number.isInteger(1 / multipleOf))
      build.unsupported('multipleOf', `${path}.multipleOf`, `'multipleOf' ${multipleOf} for integers at ${path} is not enforced here.`);
    return min === undefined && max === undefined ? integerRange(undefined, undefined) : integerRange(min, max);
  }
  if (multipleOf !== undefined)
    build.unsupported(
      'multipleOf',
      `${path}.multipleOf`,
      `'multipleOf' ${multipleOf} at ${path} is not enforced here (a whole number, or a fraction such as 0.5 or 0.01, is).`,
    );
  if (lower === undefined && upper === undefined) return anyNumber();
  const node = numberRange(lower, upper);
  if (node.kind === 'choice' && node.items.length === 0) build.fail('invalid', 'minimum', path, `The bounds at ${path} leave no number the grammar can write.`);
  return node;
}

function bound(build: GrammarBuild, schema: JsonObject, keyword: string, path: string): number | undefined {
  const value = schema[keyword];
  if (value === undefined || typeof value === 'boolean') return undefined;
  if (typeof value !== 'number') build.fail('invalid', keyword, `${path}.${keyword}`, `'${keyword}' at ${path} must be a number.`);
  return value;
}

/** Integers that are multiples of `step` within bounds: listed when few, else the decimal remainder machine. */
function multiples(build: GrammarBuild, step: bigint, min: bigint | undefined, max: bigint | undefined, path: string): GrammarNode {
  if (min !== undefined && max !== undefined) {
    const first = ceilDiv(min, step);
    const last = floorDiv(max, step);
    if (first > last) build.fail('invalid', 'multipleOf', `${path}.multipleOf`, `No multiple of ${step} lies within the bounds at ${path}.`);
    if (last - first < 1000n) {
      const values: string[] = [];
      for (let k = first; k <= last; k++) values.push((k * step).toString());
      return textChoice(values);
    }
  }
  const nonNegative = min !== undefined && min >= 0n;
  if (step <= 1000n && max === undefined && (min === undefined || min <= 0n || min <= step)) {
    const positive = remainderMachine(build, step);
    const zero = min === undefined || min <= 0n ? [literal('0')] : [];
    return choice(...zero, positive, ...(nonNegative || min !== undefined ? [] : [sequence(literal('-'), positive)]));
  }
  build.unsupported('multipleOf', `${path}.multipleOf`, `'multipleOf' ${step} with these bounds (at ${path}) is not enforced here.`);
  return integerRange(min, max);
}

/** Positive multiples of `step` in decimal: one rule per remainder, read digit by digit. */
function remainderMachine(build: GrammarBuild, step: bigint): GrammarNode {
  const name = (remainder: bigint): string => `mod${step}-r${remainder}`;
  const m = Number(step);
  for (let r = 0; r < m; r++) {
    const alternatives: GrammarNode[] = r === 0 ? [literal('')] : [];
    for (let d = 0; d <= 9; d++) alternatives.push(sequence(literal(String(d)), rule(name(BigInt((r * 10 + d) % m)))));
    build.setRule(name(BigInt(r)), choice(...alternatives));
  }
  return choice(...Array.from({ length: 9 }, (_, i) => sequence(literal(String(i + 1)), rule(name(BigInt((i + 1) % m))))));
}

function tighter(bounds: Array<Bound | undefined>, side: 'lower' | 'upper'): Bound | undefined {
  let best: Bound | undefined;
  for (const bound of bounds) {
    if (bound === undefined) continue;
    if (best === undefined) best = bound;
    else if (
      side === 'lower'
        ? bound.value > best.value || (bound.value === best.value && bound.exclusive)
        : bound.value < best.value || (bound.value === best.value && bound.exclusive)
    )
      best = bound;
  }
  return best;
}

const floorDiv = (a: bigint, b: bigint): bigint => (a >= 0n ? a / b : -((-a + b - 1n) / b));
const ceilDiv = (a: bigint, b: bigint): bigint => -floorDiv(-a, b);
