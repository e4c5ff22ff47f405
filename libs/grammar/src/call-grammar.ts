import { choice, literal, renderGrammar, rule, sequence, token } from './grammar-ast';
import type { GrammarNode, Rules } from './grammar-ast';
import { schemaGrammar } from './schema-grammar';
import type { JsonValue } from '@app/contracts';

/** How a chat template writes a tool call: `prefix name paramsPrefix arguments suffix`, calls joined by `betweenCalls`. */
export interface CallSyntax {
  prefix: string;
  paramsPrefix: string;
  suffix: string;
  betweenCalls: string;
}

/** A rule tree with every rule reference renamed by `rename`. */
function renamed(node: GrammarNode, rename: (name: string) => string): GrammarNode {
  switch (node.kind) {
    case 'rule':
      return rule(rename(node.name));
    case 'sequence':
    case 'choice':
      return { kind: node.kind, items: node.items.map((item) => renamed(item, rename)) };
    case 'repeat':
      return { ...node, item: renamed(node.item, rename) };
    default:
      return node;
  }
}

/** How the grammar lets the model write the text that closes a call. */
export type SyntaxSpelling = (text: string) => GrammarNode;

/** The syntax's text as exactly the tokens `tokenize` makes of it (llama.cpp's `<[id]>`), each with the text it stands for. */
export const exactTokens =
  (tokenize: (text: string) => Array<{ id: number; text: string }>): SyntaxSpelling =>
  (text) =>
    sequence(...tokenize(text).map(({ id, text: piece }) => token(id, piece)));

/**
 * The GBNF text of tool calls in a template's syntax: one call of any of `tools` (its arguments
 * under its schema's grammar, as a response format's are), up to `maxCalls` joined by
 * `betweenCalls`, the first without its prefix when the prompt ends with it. Each tool's rules are renamed apart (`t0-…`, `t1-…`) so the schemas share one
 * grammar. Schemas were checked at admission; one refused here is an error. The suffix that
 * closes a call is written as `spell` says (its exact tokens, where the model's vocabulary is
 * known: what node-llama-cpp writes after a call's arguments; any spelling by default); the rest
 * is text the model spells as it likes, as it writes it on node-llama-cpp.
 */
export function callsGrammar(
  tools: ReadonlyArray<{ name: string; schema: JsonValue }>,
  syntax: CallSyntax,
  {
    maxCalls,
    prefixGiven,
    spell = literal,
  }: { maxCalls: number; /** The first call's prefix is in the prompt already (a call that must be made). */ prefixGiven: boolean; spell?: SyntaxSpelling },
): string {
  const rules: Rules = new Map();
  const calls = tools.map(({ name, schema }, index) => {
    const built = schemaGrammar(schema, { strict: false });
    if (!built.ok) throw new Error(`schema of ${name} refused by the grammar builder after admission: ${built.problem.message}`);
    const rename = (ruleName: string): string => `t${index}-${ruleName}`;
    for (const [ruleName, node] of built.rules) rules.set(rename(ruleName), renamed(node, rename));
    return sequence(literal(name), literal(syntax.paramsPrefix), rule(rename('root')));
  });
  const body = sequence(choice(...calls), spell(syntax.suffix));
  const more = { kind: 'repeat' as const, item: sequence(literal(syntax.betweenCalls), literal(syntax.prefix), rule('call')), min: 0, max: maxCalls - 1 };
  const first = prefixGiven ? rule('call') : sequence(literal(syntax.prefix), rule('call'));
  return renderGrammar(new Map([['root', maxCalls > 1 ? sequence(first, more) : first], ['call', body], ...rules]));
}
