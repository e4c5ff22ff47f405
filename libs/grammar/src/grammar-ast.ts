/**
 * A small GBNF grammar model: rules built as trees, checked (every rule can end, none is
 * left-recursive), measured and written as the GBNF text that llama.cpp compiles.
 */
export type GrammarNode =
  | { kind: 'literal'; text: string }
  | { kind: 'chars'; ranges: Array<[number, number]> }
  | { kind: 'sequence'; items: GrammarNode[] }
  | { kind: 'choice'; items: GrammarNode[] }
  | { kind: 'repeat'; item: GrammarNode; min: number; max: number | undefined }
  | { kind: 'rule'; name: string }
  /** One token of the model's vocabulary by its id (llama.cpp's `<[id]>`), whatever else would spell its text. */
  | { kind: 'token'; id: number; text: string };

export const literal = (text: string): GrammarNode => ({ kind: 'literal', text });
export const chars = (ranges: Array<[number, number]>): GrammarNode => ({ kind: 'chars', ranges });
export const rule = (name: string): GrammarNode => ({ kind: 'rule', name });
export const token = (id: number, text: string): GrammarNode => ({ kind: 'token', id, text });
export const EMPTY: GrammarNode = { kind: 'sequence', items: [] };

export function sequence(...items: GrammarNode[]): GrammarNode {
  const flat = items.flatMap((item) => (item.kind === 'sequence' ? item.items : [item]));
  const merged: GrammarNode[] = [];
  for (const item of flat) {
    const last = merged.at(-1);
    if (item.kind === 'literal' && last?.kind === 'literal') merged[merged.length - 1] = literal(last.text + item.text);
    else if (!(item.kind === 'literal' && item.text === '')) merged.push(item);
  }
  return merged.length === 1 ? merged[0] : { kind: 'sequence', items: merged };
}

export function choice(...items: GrammarNode[]): GrammarNode {
  const flat = items.flatMap((item) => (item.kind === 'choice' ? item.items : [item]));
  return flat.length === 1 ? flat[0] : { kind: 'choice', items: flat };
}

export const optional = (item: GrammarNode): GrammarNode => ({ kind: 'repeat', item, min: 0, max: 1 });

export type Rules = Map<string, GrammarNode>;

const HEX = (code: number, width: number): string => code.toString(16).toUpperCase().padStart(width, '0');

function escapeChar(code: number, inClass: boolean): string {
  if (code === 0x22) return '\\"';
  if (code === 0x5c) return '\\\\';
  if (inClass && (code === 0x5d || code === 0x2d || code === 0x5b)) return `\\${String.fromCharCode(code)}`;
  if (inClass && code === 0x5e) return '\\x5E'; // llama.cpp has no `\^`; a leading one would negate
  if (code < 0x20 || code === 0x7f || (code >= 0x80 && code < 0xa0)) return `\\x${HEX(code, 2)}`;
  if (code > 0xffff) return `\\U${HEX(code, 8)}`;
  if (code >= 0xd800 && code <= 0xdfff) return `\\u${HEX(code, 4)}`;
  return String.fromCodePoint(code);
}

function renderNode(node: GrammarNode, parent: 'top' | 'sequence' | 'repeat'): string {
  switch (node.kind) {
    case 'literal':
      return `"${[...node.text].map((c) => escapeChar(c.codePointAt(0) as number, false)).join('')}"`;
    case 'chars':
      return `[${node.ranges.map(([from, to]) => (from === to ? escapeChar(from, true) : `${escapeChar(from, true)}-${escapeChar(to, true)}`)).join('')}]`;
    case 'rule':
      return node.name;
    case 'token':
      return `<[${node.id}]>`;
    case 'sequence': {
      if (node.items.length === 0) return '""';
      const text = node.items.map((item) => renderNode(item, 'sequence')).join(' ');
      return parent === 'repeat' ? `(${text})` : text;
    }
    case 'choice': {
      const text = node.items.map((item) => renderNode(item, 'top')).join(' | ');
      return parent === 'top' ? text : `(${text})`;
    }
    case 'repeat': {
      const item = renderNode(node.item, 'repeat');
      const { min, max } = node;
      if (max === 0) return '""';
      if (min === 0 && max === 1) return `${item}?`;
      if (min === 0 && max === undefined) return `${item}*`;
      if (min === 1 && max === undefined) return `${item}+`;
      return `${item}{${min},${max ?? ''}}`;
    }
  }
}

/** The GBNF text llama.cpp reads, `root` first. */
export function renderGrammar(rules: Rules): string {
  return [...rules].map(([name, node]) => `${name} ::= ${renderNode(node, 'top')}`).join('\n');
}

/** Rules reached from `root`, in the order found. */
function reachable(rules: Rules): string[] {
  const seen = new Set<string>(['root']);
  const order = ['root'];
  const visit = (node: GrammarNode): void => {
    if (node.kind === 'rule') {
      if (!seen.has(node.name)) {
        seen.add(node.name);
        order.push(node.name);
        const target = rules.get(node.name);
        if (target) visit(target);
      }
    } else if (node.kind === 'sequence' || node.kind === 'choice') node.items.forEach(visit);
    else if (node.kind === 'repeat') visit(node.item);
  };
  const root = rules.get('root');
  if (root) visit(root);
  return order;
}

/** Whether the node can produce a finite text, given which rules can. */
function canEnd(node: GrammarNode, ending: Set<string>): boolean {
  switch (node.kind) {
    case 'literal':
    case 'token':
      return true;
    case 'chars':
      return node.ranges.length > 0;
    case 'rule':
      return ending.has(node.name);
    case 'sequence':
      return node.items.every((item) => canEnd(item, ending));
    case 'choice':
      return node.items.some((item) => canEnd(item, ending));
    case 'repeat':
      return node.min === 0 || canEnd(node.item, ending);
  }
}

function canBeEmpty(node: GrammarNode, empty: Set<string>): boolean {
  switch (node.kind) {
    case 'literal':
      return node.text === '';
    case 'chars':
    case 'token':
      return false;
    case 'rule':
      return empty.has(node.name);
    case 'sequence':
      return node.items.every((item) => canBeEmpty(item, empty));
    case 'choice':
      return node.items.some((item) => canBeEmpty(item, empty));
    case 'repeat':
      return node.min === 0 || node.max === 0 || canBeEmpty(node.item, empty);
  }
}

/** The least set of rules closed under `holds`. */
function fixpoint(rules: Rules, names: string[], holds: (node: GrammarNode, set: Set<string>) => boolean): Set<string> {
  const set = new Set<string>();
  for (let changed = true; changed;) {
    changed = false;
    for (const name of names) {
      if (!set.has(name) && holds(rules.get(name) as GrammarNode, set)) {
        set.add(name);
        changed = true;
      }
    }
  }
  return set;
}

/** Rules a node may begin with (the parser enters them before reading a character). */
function leftRules(node: GrammarNode, empty: Set<string>, into: Set<string>): void {
  switch (node.kind) {
    case 'rule':
      into.add(node.name);
      return;
    case 'sequence':
      for (const item of node.items) {
        leftRules(item, empty, into);
        if (!canBeEmpty(item, empty)) return;
      }
      return;
    case 'choice':
      node.items.forEach((item) => leftRules(item, empty, into));
      return;
    case 'repeat':
      leftRules(node.item, empty, into);
      return;
    default:
      return;
  }
}

export type GrammarFault = { fault: 'no-end'; rule: string } | { fault: 'left-recursion'; rule: string } | { fault: 'empty-repeat'; rule: string };

/** Repeating what can be empty makes llama.cpp's parser loop (its grammar compiler refuses it). */
function repeatsEmpty(node: GrammarNode, empty: Set<string>): boolean {
  switch (node.kind) {
    case 'sequence':
    case 'choice':
      return node.items.some((item) => repeatsEmpty(item, empty));
    case 'repeat':
      return ((node.max === undefined || node.max > 1) && canBeEmpty(node.item, empty)) || repeatsEmpty(node.item, empty);
    default:
      return false;
  }
}

/**
 * What would make llama.cpp refuse the grammar or never let a value end: a rule that cannot
 * produce a finite text (a `$ref` cycle with no way out), or one it enters again before reading
 * anything (a `$ref` that is its own first alternative).
 */
export function grammarFault(rules: Rules): GrammarFault | undefined {
  const names = reachable(rules);
  const ending = fixpoint(rules, names, canEnd);
  const stuck = names.find((name) => !ending.has(name));
  if (stuck !== undefined) return { fault: 'no-end', rule: stuck };
  const empty = fixpoint(rules, names, canBeEmpty);
  const looping = names.find((name) => repeatsEmpty(rules.get(name) as GrammarNode, empty));
  if (looping !== undefined) return { fault: 'empty-repeat', rule: looping };
  const left = new Map(
    names.map((name) => {
      const into = new Set<string>();
      leftRules(rules.get(name) as GrammarNode, empty, into);
      return [name, into] as const;
    }),
  );
  for (const start of names) {
    const stack = [...(left.get(start) ?? [])];
    const seen = new Set<string>();
    while (stack.length > 0) {
      const name = stack.pop() as string;
      if (name === start) return { fault: 'left-recursion', rule: start };
      if (seen.has(name)) continue;
      seen.add(name);
      stack.push(...(left.get(name) ?? []));
    }
  }
  return undefined;
}

/** Symbols llama.cpp holds once it has expanded every `{m,n}` (it writes each count out). */
export function expandedSize(rules: Rules): number {
  const size = (node: GrammarNode): number => {
    switch (node.kind) {
      case 'literal':
        return Math.max(1, [...node.text].length);
      case 'chars':
        return 1 + node.ranges.length;
      case 'rule':
      case 'token':
        return 1;
      case 'sequence':
      case 'choice':
        return 1 + node.items.reduce((sum, item) => sum + size(item), 0);
      case 'repeat':
        return 1 + size(node.item) * Math.max(1, node.max ?? node.min + 1);
    }
  };
  let total = 0;
  for (const node of rules.values()) total += size(node);
  return total;
}

/**
 * Characters of the shortest text the grammar's `root` writes (Infinity when it writes none): what
 * any answer under it must hold at least. Rules' lengths are found together, each improving until
 * none does (a `$ref` cycle counts only through its ways out).
 */
export function shortestLength(rules: Rules): number {
  const lengths = new Map<string, number>([...rules.keys()].map((name) => [name, Infinity]));
  const shortest = (node: GrammarNode): number => {
    switch (node.kind) {
      case 'literal':
      case 'token':
        return [...node.text].length;
      case 'chars':
        return 1;
      case 'rule':
        return lengths.get(node.name) ?? Infinity;
      case 'sequence':
        return node.items.reduce((sum, item) => sum + shortest(item), 0);
      case 'choice':
        return Math.min(...node.items.map(shortest));
      case 'repeat':
        return node.min === 0 ? 0 : node.min * shortest(node.item);
    }
  };
  for (let changed = true; changed;) {
    changed = false;
    for (const [name, node] of rules) {
      const length = shortest(node);
      if (length < (lengths.get(name) ?? Infinity)) {
        lengths.set(name, length);
        changed = true;
      }
    }
  }
  return lengths.get('root') ?? Infinity;
}
