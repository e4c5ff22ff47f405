import { EMPTY, chars, choice, literal, sequence } from './grammar-ast';
import type { GrammarNode } from './grammar-ast';
import { lengthRange } from './regex-length';
import type { RegexNode } from './regex-parser';
import { ANY, complement, intersect } from './regex-ranges';

// A parsed pattern (regex-parser.ts) as the grammar of a JSON string's text. What the pattern
// modules export is reachable from here too: the string grammar and json-text.ts import it so.
export { PATTERN_LIMITS, PatternProblem, parsePattern } from './regex-parser';
export type { RegexNode } from './regex-parser';
export { fitLength, lengthRange } from './regex-length';
export { complement, intersect } from './regex-ranges';

/** JSON's escapes for the characters a string may not hold as they are. */
const SHORT_ESCAPES: Record<number, string> = { 0x22: '\\"', 0x5c: '\\\\', 0x08: '\\b', 0x09: '\\t', 0x0a: '\\n', 0x0c: '\\f', 0x0d: '\\r' };
const PLAIN: Array<[number, number]> = intersect(
  complement([
    [0, 0x1f],
    [0x22, 0x22],
    [0x5c, 0x5c],
    [0x7f, 0x7f],
  ]),
  ANY,
);

/** One character of the set, as it appears inside a JSON string. */
export function jsonChars(ranges: Array<[number, number]>): GrammarNode {
  const plain = intersect(ranges, PLAIN);
  const alternatives: GrammarNode[] = plain.length > 0 ? [chars(plain)] : [];
  for (const [a, b] of intersect(ranges, complement(PLAIN))) {
    for (let c = a; c <= b; c++) alternatives.push(literal(SHORT_ESCAPES[c] ?? `\\u${c.toString(16).padStart(4, '0')}`));
  }
  return alternatives.length === 0 ? choice() : choice(...alternatives);
}

/** The grammar of a pattern's strings, inside the quotes. */
export function regexGrammar(node: RegexNode): GrammarNode {
  switch (node.t) {
    case 'set':
      return node.ranges.length === 1 &&
        node.ranges[0][0] === node.ranges[0][1] &&
        SHORT_ESCAPES[node.ranges[0][0]] === undefined &&
        node.ranges[0][0] >= 0x20 &&
        node.ranges[0][0] !== 0x7f
        ? literal(String.fromCodePoint(node.ranges[0][0]))
        : jsonChars(node.ranges);
    case 'seq':
      return node.items.length === 0 ? EMPTY : sequence(...node.items.map(regexGrammar));
    case 'alt':
      return choice(...node.items.map(regexGrammar));
    case 'rep': {
      // An open repetition is bounded: a model can loop in `[a-z]+` until max_tokens cuts the
      // string off. Every string the bound allows still matches.
      const single = lengthRange(node.item)[1] === 1;
      return { kind: 'repeat', item: regexGrammar(node.item), min: node.min, max: node.max ?? node.min + (single ? OPEN_REPEAT_CHARS : OPEN_REPEAT_GROUPS) };
    }
  }
}

/** How many more than its fewest an open repetition (`*`, `+`, `{n,}`) may match: of single characters, and of longer parts. */
export const OPEN_REPEAT_CHARS = 64;
export const OPEN_REPEAT_GROUPS = 8;
