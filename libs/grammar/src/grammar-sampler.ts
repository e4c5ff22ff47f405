import type { GrammarNode, Rules } from './grammar-ast';

/**
 * Random texts a grammar allows, for tests and benchmarks: every choice and count is drawn from
 * `random`, and once the text is deep (or long) the cheapest way to finish is taken, so that
 * recursive grammars end.
 */
export function sampleGrammar(rules: Rules, random: () => number, options: { maxDepth?: number; maxRepeat?: number } = {}): string {
  const maxDepth = options.maxDepth ?? 12;
  const maxRepeat = options.maxRepeat ?? 6;
  const cost = finishingCosts(rules);
  const known = new WeakMap<GrammarNode, number>();
  const nodeCost = (node: GrammarNode): number => {
    let value = known.get(node);
    if (value === undefined) known.set(node, (value = costOf(node, cost)));
    return value;
  };
  const pick = (n: number): number => Math.min(n - 1, Math.floor(random() * n));
  let out = '';
  const emit = (node: GrammarNode, depth: number): void => {
    switch (node.kind) {
      case 'literal':
      case 'token':
        out += node.text;
        return;
      case 'chars': {
        // Favour the first range's start and small code points, where validators' edge cases sit.
        const [from, to] = node.ranges[pick(node.ranges.length)];
        const span = to - from;
        const offset = random() < 0.2 ? 0 : random() < 0.2 ? span : Math.floor(random() * Math.min(span + 1, 128));
        out += String.fromCodePoint(from + Math.min(offset, span));
        return;
      }
      case 'rule':
        emit(rules.get(node.name) as GrammarNode, depth + 1);
        return;
      case 'sequence':
        for (const item of node.items) emit(item, depth);
        return;
      case 'choice': {
        const finite = node.items.filter((item) => Number.isFinite(nodeCost(item)));
        const choices = depth > maxDepth ? [finite.reduce((best, item) => (nodeCost(item) < nodeCost(best) ? item : best))] : finite;
        emit(choices[pick(choices.length)], depth);
        return;
      }
      case 'repeat': {
        const top = node.max ?? node.min + maxRepeat;
        const edge = random();
        // Counts at both ends of the range half the time, anywhere within it otherwise.
        let times =
          depth > maxDepth
            ? node.min
            : edge < 0.25
              ? node.min
              : edge < 0.5
                ? Math.min(top, node.min + maxRepeat)
                : node.min + pick(Math.min(top, node.min + maxRepeat) - node.min + 1);
        if (node.max !== undefined) times = Math.min(times, node.max);
        for (let i = 0; i < times; i++) emit(node.item, depth + 1);
        return;
      }
    }
  };
  emit(rules.get('root') as GrammarNode, 0);
  return out;
}

function costOf(node: GrammarNode, rules: Map<string, number>): number {
  switch (node.kind) {
    case 'literal':
    case 'token':
      return node.text.length;
    case 'chars':
      return 1;
    case 'rule':
      return rules.get(node.name) ?? Infinity;
    case 'sequence':
      return node.items.reduce((sum, item) => sum + costOf(item, rules), 0);
    case 'choice':
      return Math.min(Infinity, ...node.items.map((item) => costOf(item, rules)));
    case 'repeat':
      return node.min === 0 ? 0 : node.min * costOf(node.item, rules);
  }
}

/** The shortest text each rule can finish with (a fixpoint: rules refer to each other). */
function finishingCosts(rules: Rules): Map<string, number> {
  const costs = new Map<string, number>();
  for (let changed = true; changed;) {
    changed = false;
    for (const [name, node] of rules) {
      const cost = costOf(node, costs);
      if (cost < (costs.get(name) ?? Infinity)) {
        costs.set(name, cost);
        changed = true;
      }
    }
  }
  return costs;
}

/** Whether the grammar allows exactly `text` (for tests: every way through is tried, positions memoised per rule). */
export function grammarAccepts(rules: Rules, text: string): boolean {
  const input = [...text];
  const memo = new Map<string, Set<number>>();
  const ends = (node: GrammarNode, from: number): Set<number> => {
    switch (node.kind) {
      case 'literal':
      case 'token': {
        const want = [...node.text];
        for (let i = 0; i < want.length; i++) if (input[from + i] !== want[i]) return new Set();
        return new Set([from + want.length]);
      }
      case 'chars': {
        const c = input[from]?.codePointAt(0);
        return c !== undefined && node.ranges.some(([a, b]) => c >= a && c <= b) ? new Set([from + 1]) : new Set();
      }
      case 'rule': {
        const key = `${node.name}@${from}`;
        let found = memo.get(key);
        if (!found) {
          memo.set(key, new Set());
          found = ends(rules.get(node.name) as GrammarNode, from);
          memo.set(key, found);
        }
        return found;
      }
      case 'sequence': {
        let at = new Set([from]);
        for (const item of node.items) {
          const next = new Set<number>();
          for (const position of at) for (const end of ends(item, position)) next.add(end);
          at = next;
          if (at.size === 0) break;
        }
        return at;
      }
      case 'choice': {
        const all = new Set<number>();
        for (const item of node.items) for (const end of ends(item, from)) all.add(end);
        return all;
      }
      case 'repeat': {
        const all = new Set<number>();
        let at = new Set([from]);
        for (let count = 0; at.size > 0; count++) {
          if (count >= node.min) for (const position of at) all.add(position);
          if (node.max !== undefined && count >= node.max) break;
          const next = new Set<number>();
          for (const position of at) for (const end of ends(node.item, position)) if (end > position) next.add(end);
          at = next;
        }
        return all;
      }
    }
  };
  return ends(rules.get('root') as GrammarNode, 0).has(input.length);
}
