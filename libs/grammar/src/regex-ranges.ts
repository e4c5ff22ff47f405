// Sets of code points as sorted, non-overlapping [first, last] ranges: what a character class, an
// escape or a JSON string's plain characters stand for.

export const MAX_CODE = 0x10ffff;
/** Every code point but the surrogates, which no well-formed string holds alone. */
export const ANY: Array<[number, number]> = [
  [0, 0xd7ff],
  [0xe000, MAX_CODE],
];

/** Sorted, with overlapping and adjacent ranges merged. */
export function normalise(ranges: Array<[number, number]>): Array<[number, number]> {
  const sorted = ranges.filter(([a, b]) => a <= b).sort((x, y) => x[0] - y[0]);
  const out: Array<[number, number]> = [];
  for (const [a, b] of sorted) {
    const last = out.at(-1);
    if (last && a <= last[1] + 1) last[1] = Math.max(last[1], b);
    else out.push([a, b]);
  }
  return out;
}

export function complement(ranges: Array<[number, number]>): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  let next = 0;
  for (const [a, b] of normalise(ranges)) {
    if (a > next) out.push([next, a - 1]);
    next = Math.max(next, b + 1);
  }
  if (next <= MAX_CODE) out.push([next, MAX_CODE]);
  return intersect(out, ANY);
}

export function intersect(x: Array<[number, number]>, y: Array<[number, number]>): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (const [a, b] of normalise(x)) for (const [c, d] of normalise(y)) if (Math.max(a, c) <= Math.min(b, d)) out.push([Math.max(a, c), Math.min(b, d)]);
  return normalise(out);
}
