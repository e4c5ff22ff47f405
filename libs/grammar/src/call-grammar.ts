import { choice, literal, renderGrammar, rule, sequence } from './grammar-ast';
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

/**
 * The GBNF text of tool calls in a template's syntax: one call of any of `tools` (its arguments
 * under its schema's grammar, as a response format's are), up to `maxCalls` joined by
 * `betweenCalls`, the first without its prefix when the prompt ends with it. Each tool's rules are renamed apart (`t0-…`, `t1-…`) so the schemas share one
 * grammar. Schemas were checked at admission; one refused here is an error.
 */
export function callsGrammar(
  tools: ReadonlyArray<{ name: string; schema: JsonValue }>,
  syntax: CallSyntax,
  { maxCalls, prefixGiven }: { maxCalls: number; /** The first call's prefix is in the prompt already (a call that must be made). */ prefixGiven: boolean },
): string {
  const rules: Rules = new Map();
  const calls = tools.map(({ name, schema }, index) => {
    const built = schemaGrammar(schema, { strict: false });
    if (!built.ok) throw new Error(`schema of ${name} refused by the grammar builder after admission: ${built.problem.message}`);
    const rename = (ruleName: string): string => `t${index}-${ruleName}`;
    for (const [ruleName, node] of built.rules) rules.set(rename(ruleName), renamed(node, rename));
    return sequence(literal(name), literal(syntax.paramsPrefix), rule(rename('root')));
  });
  const body = sequence(choice(...calls), literal(syntax.suffix));
  const more = { kind: 'repeat' as const, item: sequence(literal(syntax.betweenCalls), literal(syntax.prefix), rule('call')), min: 0, max: maxCalls - 1 };
  const first = prefixGiven ? rule('call') : sequence(literal(syntax.prefix), rule('call'));
  return renderGrammar(new Map([['root', maxCalls > 1 ? sequence(first, more) : first], ['call', body], ...rules]));
}
