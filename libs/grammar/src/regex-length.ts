import type { RegexNode } from './regex-parser';

// How long the strings a pattern matches are, and the same pattern kept to a schema's
// minLength and maxLength.

/** Fewest and most characters a node matches (`undefined`: no limit). */
export function lengthRange(node: RegexNode): [number, number | undefined] {
  switch (node.t) {
    case 'set':
      return [1, 1];
    case 'seq':
      return node.items.reduce<[number, number | undefined]>(
        ([lo, hi], item) => {
          const [a, b] = lengthRange(item);
          return [lo + a, hi === undefined || b === undefined ? undefined : hi + b];
        },
        [0, 0],
      );
    case 'alt': {
      const ranges = node.items.map(lengthRange);
      return [Math.min(...ranges.map(([a]) => a)), ranges.some(([, b]) => b === undefined) ? undefined : Math.max(...ranges.map(([, b]) => b as number))];
    }
    case 'rep': {
      const [a, b] = lengthRange(node.item);
      return [a * node.min, node.max === undefined ? (b === 0 ? 0 : undefined) : b === undefined ? undefined : b * node.max];
    }
  }
}

/**
 * The same language kept to strings of `min` to `max` characters, or undefined where this
 * cannot be done by narrowing one repetition of single characters in each branch (every
 * string the result matches still matches the pattern).
 */
export function fitLength(node: RegexNode, min: number, max: number | undefined): RegexNode | undefined {
  const [lo, hi] = lengthRange(node);
  if (lo >= min && (max === undefined || (hi !== undefined && hi <= max))) return node;
  if (node.t === 'alt') {
    const fitted = node.items.map((item) => fitLength(item, min, max)).filter((item): item is RegexNode => item !== undefined);
    return fitted.length === 0 ? undefined : fitted.length === 1 ? fitted[0] : { t: 'alt', items: fitted };
  }
  const items = node.t === 'seq' ? node.items : [node];
  // A repetition whose item has a length of at least 1 and at most some number: its count can
  // be narrowed. Single characters first (the count is then the length itself).
  const itemRange = (item: RegexNode): [number, number | undefined] => (item.t === 'rep' ? lengthRange(item.item) : [0, undefined]);
  const narrowable = (item: RegexNode): boolean => item.t === 'rep' && itemRange(item)[0] >= 1 && itemRange(item)[1] !== undefined;
  const single = items.findIndex((item) => narrowable(item) && itemRange(item)[1] === 1);
  const stretchable = single >= 0 ? single : items.findIndex(narrowable);
  if (stretchable < 0) return undefined;
  // Every other open repetition keeps to its fewest; the chosen one takes up the slack.
  const fixed = items.map((item, index) => (index !== stretchable && item.t === 'rep' && item.max === undefined ? { ...item, max: item.min } : item));
  const rest = fixed.filter((_, index) => index !== stretchable).map(lengthRange);
  const restLo = rest.reduce((sum, [a]) => sum + a, 0);
  const restHi = rest.some(([, b]) => b === undefined) ? undefined : rest.reduce((sum, [, b]) => sum + (b as number), 0);
  if (max !== undefined && restHi === undefined) return undefined;
  const chosen = fixed[stretchable] as Extract<RegexNode, { t: 'rep' }>;
  const [itemLo, itemHi] = itemRange(chosen) as [number, number];
  const newMin = Math.max(chosen.min, Math.ceil((min - restLo) / itemLo));
  const newMax = max === undefined ? chosen.max : Math.min(chosen.max ?? Infinity, Math.floor((max - (restHi as number)) / itemHi));
  if (newMax !== undefined && newMax < newMin) return undefined;
  fixed[stretchable] = { ...chosen, min: newMin, max: newMax };
  const result: RegexNode = { t: 'seq', items: fixed };
  const [fittedLo, fittedHi] = lengthRange(result);
  return fittedLo >= min && (max === undefined || (fittedHi !== undefined && fittedHi <= max)) ? result : undefined;
}
