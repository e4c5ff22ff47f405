import { EMPTY, chars, choice, literal, optional, sequence } from './grammar-ast';
import type { GrammarNode } from './grammar-ast';
import { jsonChars } from './regex-grammar';

/** Pieces of JSON text every schema's grammar is written with. */
export const WS = optional(literal(' '));
export const QUOTE = literal('"');
/** A character of a free string: any but the ones JSON escapes, or the escapes a model would write. */
export const STRING_CHAR = choice(
  chars([
    [0x20, 0x21],
    [0x23, 0x5b],
    [0x5d, 0x7e],
    [0xa0, 0xd7ff],
    [0xe000, 0x10ffff],
  ]),
  literal('\\"'),
  literal('\\\\'),
  literal('\\n'),
  literal('\\t'),
);

/** Texts as one alternation, shared beginnings merged (a trie): llama.cpp then tracks few alternatives per character. */
export function textChoice(texts: string[]): GrammarNode {
  if (texts.length <= 4) return choice(...texts.map(literal));
  const build = (group: string[], offset: number): GrammarNode => {
    const byFirst = new Map<string, string[]>();
    let ends = false;
    for (const text of group) {
      if (text.length === offset) ends = true;
      else {
        const first = text[offset];
        byFirst.set(first, [...(byFirst.get(first) ?? []), text]);
      }
    }
    const alternatives: GrammarNode[] = ends ? [literal('')] : [];
    for (const [, members] of byFirst) {
      // Follow the characters all members share.
      let end = offset + 1;
      while (members.every((text) => text.length > end && text[end] === members[0][end])) end++;
      alternatives.push(sequence(literal(members[0].slice(offset, end)), members.length === 1 && members[0].length === end ? EMPTY : build(members, end)));
    }
    return choice(...alternatives);
  };
  return build(texts, 0);
}

/** A JSON string that is none of `names` (extra keys must not repeat a declared one). */
export function keyExcept(names: string[]): GrammarNode {
  const plainName = (name: string): boolean => [...name].every((c) => c >= ' ' && c !== '"' && c !== '\\' && c !== '\x7f');
  const visit = (group: string[], offset: number): GrammarNode => {
    const byFirst = new Map<string, string[]>();
    for (const name of group) if (name.length > offset) byFirst.set(name[offset], [...(byFirst.get(name[offset]) ?? []), name]);
    const endsHere = group.some((name) => name.length === offset);
    const alternatives: GrammarNode[] = [];
    const anyChar = { kind: 'repeat' as const, item: STRING_CHAR, min: 0, max: undefined };
    // A character no name continues with, then anything.
    const others = jsonChars(
      splitOut(
        [0x20, 0x10ffff],
        [...byFirst.keys()].map((c) => c.codePointAt(0) as number),
      ),
    );
    alternatives.push(sequence(others, anyChar));
    for (const [c, members] of byFirst) alternatives.push(sequence(literal(c), visit(members, offset + 1)));
    // Stopping here is a different key unless a name ends here.
    if (!endsHere) alternatives.push(EMPTY);
    return choice(...alternatives);
  };
  const plain = names.filter(plainName);
  return sequence(QUOTE, plain.length === 0 ? { kind: 'repeat', item: STRING_CHAR, min: 0, max: undefined } : visit(plain, 0), QUOTE);
}

/** `[a, b]` without the given code points. */
function splitOut([a, b]: [number, number], points: number[]): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  let start = a;
  for (const p of [...points].sort((x, y) => x - y)) {
    if (p < start || p > b) continue;
    if (p > start) out.push([start, p - 1]);
    start = p + 1;
  }
  if (start <= b) out.push([start, b]);
  return out;
}
