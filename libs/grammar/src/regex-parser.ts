import { ANY, MAX_CODE, complement, intersect, normalise } from './regex-ranges';

/**
 * A JSON Schema `pattern` (an ECMAScript regular expression, as ajv reads it with the `u` flag)
 * as a grammar over the JSON text of a string: what a generated string may hold, escaped as JSON
 * writes it. Regular constructs translate exactly; look-around, back-references, word
 * boundaries and Unicode property escapes have no grammar equivalent and are named.
 */
export type RegexNode =
  | { t: 'set'; ranges: Array<[number, number]> }
  | { t: 'seq'; items: RegexNode[] }
  | { t: 'alt'; items: RegexNode[] }
  | { t: 'rep'; item: RegexNode; min: number; max: number | undefined };

/** A pattern construct the grammar cannot express, or a pattern that is not a regular expression. */
export class PatternProblem extends Error {
  constructor(
    readonly reason: 'unsupported' | 'invalid' | 'limit',
    message: string,
  ) {
    super(message);
  }
}

/** Bounds on what one pattern may cost. */
export const PATTERN_LIMITS = {
  /** Characters in the pattern. */
  length: 1_000,
  /** Largest `{n,m}` count. */
  repeat: 1_000,
  /** Repetitions nested in repetitions (`(a+)+` is 2). */
  nestedRepeats: 3,
  /** Characters the pattern's parts stand for once every `{n,m}` is written out. */
  expanded: 20_000,
} as const;

const code = (c: string): number => c.codePointAt(0) as number;
const DIGITS: Array<[number, number]> = [[0x30, 0x39]];
const WORD: Array<[number, number]> = [
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a],
];
const SPACE: Array<[number, number]> = [
  [0x09, 0x0d],
  [0x20, 0x20],
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
];
const LINE_ENDS: Array<[number, number]> = [
  [0x0a, 0x0a],
  [0x0d, 0x0d],
  [0x2028, 0x2029],
];
const SIMPLE_ESCAPES: Record<string, number> = { t: 9, n: 10, v: 11, f: 12, r: 13, '0': 0 };
const CLASS_ESCAPES: Record<string, Array<[number, number]>> = { d: DIGITS, w: WORD, s: SPACE };

const set = (ranges: Array<[number, number]>): RegexNode => ({ t: 'set', ranges: normalise(ranges) });

/** Reads one pattern by recursive descent, over its code points (as the `u` flag reads it). */
class RegexParser {
  private i = 0;
  private readonly chars: string[];

  constructor(pattern: string) {
    this.chars = [...pattern];
  }

  /** Top-level branches, each with whether it is anchored at its start and end. */
  parseTop(): Array<{ node: RegexNode; start: boolean; end: boolean }> {
    const branches: Array<{ node: RegexNode; start: boolean; end: boolean }> = [];
    for (;;) {
      let start = false;
      if (this.peek() === '^') {
        this.i++;
        start = true;
      }
      const items = this.parseSequence(true);
      let end = false;
      if (this.peek() === '$') {
        this.i++;
        end = true;
      }
      branches.push({ node: { t: 'seq', items }, start, end });
      if (this.peek() === '|') {
        this.i++;
        continue;
      }
      if (this.i < this.chars.length)
        throw new PatternProblem(
          this.peek() === ')' ? 'invalid' : 'unsupported',
          this.peek() === ')' ? 'unbalanced parentheses' : `'${this.peek()}' inside the pattern (anchors only at its start and end)`,
        );
      return branches;
    }
  }

  private peek(offset = 0): string | undefined {
    return this.chars[this.i + offset];
  }

  private parseAlternation(): RegexNode {
    const items = [{ t: 'seq', items: this.parseSequence(false) } as RegexNode];
    while (this.peek() === '|') {
      this.i++;
      items.push({ t: 'seq', items: this.parseSequence(false) });
    }
    return items.length === 1 ? items[0] : { t: 'alt', items };
  }

  private parseSequence(top: boolean): RegexNode[] {
    const items: RegexNode[] = [];
    for (;;) {
      const c = this.peek();
      if (c === undefined || c === '|' || c === ')') return items;
      if (c === '$' && top && (this.peek(1) === undefined || this.peek(1) === '|')) return items;
      if (c === '^' || c === '$') throw new PatternProblem('unsupported', `anchor '${c}' inside the pattern`);
      items.push(this.parseQuantifiers(this.parseAtom()));
    }
  }

  private parseQuantifiers(atom: RegexNode): RegexNode {
    const c = this.peek();
    let min: number;
    let max: number | undefined;
    if (c === '*') [min, max] = [0, undefined];
    else if (c === '+') [min, max] = [1, undefined];
    else if (c === '?') [min, max] = [0, 1];
    else if (c === '{') {
      const match = /^\{(\d+)(,(\d*))?\}/.exec(this.chars.slice(this.i, this.i + 24).join(''));
      if (!match) throw new PatternProblem('invalid', `'{' not followed by a count`);
      min = Number(match[1]);
      max = match[2] === undefined ? min : match[3] === '' ? undefined : Number(match[3]);
      if (min > PATTERN_LIMITS.repeat || (max ?? 0) > PATTERN_LIMITS.repeat) throw new PatternProblem('limit', `a count above ${PATTERN_LIMITS.repeat}`);
      if (max !== undefined && max < min) throw new PatternProblem('invalid', 'numbers out of order in {} quantifier');
      this.i += match[0].length - 1;
    } else return atom;
    this.i++;
    if (this.peek() === '?') this.i++; // lazy: the same strings
    if (['*', '+', '?', '{'].includes(this.peek() ?? '')) throw new PatternProblem('invalid', 'nothing to repeat');
    return { t: 'rep', item: atom, min, max };
  }

  private parseAtom(): RegexNode {
    const c = this.peek() as string;
    this.i++;
    switch (c) {
      case '.':
        return set(complement(LINE_ENDS));
      case '(': {
        if (this.peek() === '?') {
          const next = this.peek(1);
          if (next === ':') this.i += 2;
          else if (next === '<' && this.peek(2) !== '=' && this.peek(2) !== '!') {
            const close = this.chars.indexOf('>', this.i);
            if (close < 0) throw new PatternProblem('invalid', 'unterminated group name');
            this.i = close + 1;
          } else if (next === '=' || next === '!') throw new PatternProblem('unsupported', 'look-ahead');
          else if (next === '<') throw new PatternProblem('unsupported', 'look-behind');
          else throw new PatternProblem('unsupported', 'group modifiers');
        }
        const inner = this.parseAlternation();
        if (this.peek() !== ')') throw new PatternProblem('invalid', 'unbalanced parentheses');
        this.i++;
        return inner;
      }
      case ')':
        throw new PatternProblem('invalid', 'unbalanced parentheses');
      case '[':
        return this.parseClass();
      case '\\':
        return this.parseEscape(false);
      case '*':
      case '+':
      case '?':
      case '{':
        throw new PatternProblem('invalid', 'nothing to repeat');
      default:
        return set([[code(c), code(c)]]);
    }
  }

  /** After a backslash: one character's ranges (a class escape stands for several). */
  private escapeRanges(inClass: boolean): Array<[number, number]> {
    const c = this.peek();
    if (c === undefined) throw new PatternProblem('invalid', '\\ at end of pattern');
    this.i++;
    const lower = c.toLowerCase();
    if (CLASS_ESCAPES[lower]) return c === lower ? CLASS_ESCAPES[lower] : complement(CLASS_ESCAPES[lower]);
    if (SIMPLE_ESCAPES[c] !== undefined) {
      if (c === '0' && /\d/.test(this.peek() ?? '')) throw new PatternProblem('invalid', 'octal escape');
      return [[SIMPLE_ESCAPES[c], SIMPLE_ESCAPES[c]]];
    }
    if (c === 'b' && inClass) return [[8, 8]];
    if (c === 'b' || c === 'B') throw new PatternProblem('unsupported', 'word boundary (\\b, \\B)');
    if (/[1-9]/.test(c) || c === 'k') throw new PatternProblem('unsupported', 'back-reference');
    if (c === 'p' || c === 'P') throw new PatternProblem('unsupported', 'Unicode property escape (\\p{...})');
    if (c === 'x') return this.hex(2);
    if (c === 'u') {
      if (this.peek() === '{') {
        const close = this.chars.indexOf('}', this.i);
        const value = close < 0 ? NaN : parseInt(this.chars.slice(this.i + 1, close).join(''), 16);
        if (!Number.isFinite(value) || value > MAX_CODE) throw new PatternProblem('invalid', 'bad \\u{...} escape');
        this.i = close + 1;
        return [[value, value]];
      }
      return this.hex(4);
    }
    if (c === 'c') {
      const letter = this.peek();
      if (letter === undefined || !/[a-zA-Z]/.test(letter)) throw new PatternProblem('invalid', 'bad \\c escape');
      this.i++;
      const value = code(letter) % 32;
      return [[value, value]];
    }
    if (/[\^$\\.*+?()[\]{}|/]/.test(c) || (inClass && c === '-')) return [[code(c), code(c)]];
    throw new PatternProblem('invalid', `invalid escape \\${c}`);
  }

  private hex(width: number): Array<[number, number]> {
    const digits = this.chars.slice(this.i, this.i + width).join('');
    if (!new RegExp(`^[0-9a-fA-F]{${width}}$`).test(digits)) throw new PatternProblem('invalid', 'bad hexadecimal escape');
    this.i += width;
    const value = parseInt(digits, 16);
    return [[value, value]];
  }

  private parseEscape(inClass: boolean): RegexNode {
    return set(this.escapeRanges(inClass));
  }

  private parseClass(): RegexNode {
    let negated = false;
    if (this.peek() === '^') {
      negated = true;
      this.i++;
    }
    const ranges: Array<[number, number]> = [];
    for (;;) {
      const c = this.peek();
      if (c === undefined) throw new PatternProblem('invalid', 'unterminated character class');
      if (c === ']') {
        this.i++;
        break;
      }
      const from = this.classAtom();
      if (this.peek() === '-' && this.peek(1) !== ']' && this.peek(1) !== undefined) {
        this.i++;
        const to = this.classAtom();
        if (from.length !== 1 || to.length !== 1 || from[0][0] !== from[0][1] || to[0][0] !== to[0][1])
          throw new PatternProblem('invalid', 'a class escape in a range');
        if (to[0][0] < from[0][0]) throw new PatternProblem('invalid', 'range out of order in character class');
        ranges.push([from[0][0], to[0][0]]);
      } else ranges.push(...from);
    }
    return set(negated ? complement(ranges) : intersect(ranges, ANY));
  }

  private classAtom(): Array<[number, number]> {
    const c = this.peek() as string;
    this.i++;
    if (c === '\\') return this.escapeRanges(true);
    return [[code(c), code(c)]];
  }
}

function nestedRepeats(node: RegexNode): number {
  switch (node.t) {
    case 'set':
      return 0;
    case 'seq':
    case 'alt':
      return Math.max(0, ...node.items.map(nestedRepeats));
    case 'rep':
      return 1 + nestedRepeats(node.item);
  }
}

function expanded(node: RegexNode): number {
  switch (node.t) {
    case 'set':
      return 1;
    case 'seq':
    case 'alt':
      return node.items.reduce((sum, item) => sum + expanded(item), 0);
    case 'rep':
      return expanded(node.item) * Math.max(1, node.max ?? node.min + 1);
  }
}

/** A pattern as the strings it matches anywhere in them (JSON Schema's patterns are searches). */
export function parsePattern(pattern: string): RegexNode {
  if (pattern.length > PATTERN_LIMITS.length) throw new PatternProblem('limit', `a pattern longer than ${PATTERN_LIMITS.length} characters`);
  const anyText: RegexNode = { t: 'rep', item: set(ANY), min: 0, max: undefined };
  const branches = new RegexParser(pattern)
    .parseTop()
    .map(({ node, start, end }): RegexNode => (start && end ? node : { t: 'seq', items: [...(start ? [] : [anyText]), node, ...(end ? [] : [anyText])] }));
  const node: RegexNode = branches.length === 1 ? branches[0] : { t: 'alt', items: branches };
  if (nestedRepeats(node) > PATTERN_LIMITS.nestedRepeats)
    throw new PatternProblem('limit', `repetitions nested more than ${PATTERN_LIMITS.nestedRepeats} deep`);
  if (expanded(node) > PATTERN_LIMITS.expanded) throw new PatternProblem('limit', `a pattern that expands to more than ${PATTERN_LIMITS.expanded} parts`);
  return node;
}
