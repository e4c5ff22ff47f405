import type { JsonValue } from '@app/contracts';
import { EMPTY, expandedSize, grammarFault, literal, renderGrammar, sequence, shortestLength } from './grammar-ast';
import type { GrammarNode, Rules } from './grammar-ast';
import type { SchemaProblem } from './grammar-build';
import { Refusal, SchemaGrammarBuilder } from './schema-builder';
import { SCHEMA_LIMITS } from './schema-limits';
import type { SchemaLimit } from './schema-limits';

export type { SchemaProblem } from './grammar-build';

export type SchemaGrammar = { ok: true; rules: Rules; ignored: SchemaProblem[] } | { ok: false; problem: SchemaProblem };

export interface SchemaGrammarOptions {
  /** OpenAI's `strict`: a keyword the grammar cannot enforce refuses the schema. */
  strict: boolean;
}

/** A whole-schema limit passed: `what` (the measure found) names the limit. */
const wholeSchemaOverLimit = (limit: SchemaLimit, what: string): SchemaGrammar => ({
  ok: false,
  problem: { kind: 'limit', keyword: limit, path: '$', message: `${what} exceeds the limit of ${SCHEMA_LIMITS[limit]} (${limit}).` },
});

/** The grammar of a schema: rules from `root`, or the problem that refuses it. */
export function schemaGrammar(schema: JsonValue, options: SchemaGrammarOptions): SchemaGrammar {
  try {
    const size = JSON.stringify(schema)?.length ?? 0;
    if (size > SCHEMA_LIMITS.size) return wholeSchemaOverLimit('size', `The schema's ${size} characters`);
    const builder = new SchemaGrammarBuilder(schema, options.strict);
    builder.rules.set('root', EMPTY);
    const root = builder.visit(schema, '$', 0);
    builder.rules.set('root', root);
    const fault = grammarFault(builder.rules);
    if (fault) {
      const message =
        fault.fault === 'no-end'
          ? `The schema allows no finite value: a '$ref' cycle with no way out (at ${fault.rule}).`
          : fault.fault === 'left-recursion'
            ? `The schema refers to itself before any value is written (a '$ref' cycle at ${fault.rule}).`
            : `The schema repeats something that can be empty (at ${fault.rule}).`;
      return { ok: false, problem: { kind: 'invalid', keyword: '$ref', path: '$', message } };
    }
    const shortest = shortestLength(builder.rules);
    // No answer could hold it: every one would end cut by max_tokens or the context.
    if (shortest > SCHEMA_LIMITS.shortestValue) return wholeSchemaOverLimit('shortestValue', `The schema's shortest value, ${shortest} characters,`);
    const symbols = expandedSize(builder.rules);
    if (symbols > SCHEMA_LIMITS.grammarSymbols) return wholeSchemaOverLimit('grammarSymbols', `The schema's grammar, ${symbols} symbols written out,`);
    return { ok: true, rules: builder.rules, ignored: builder.ignored };
  } catch (error) {
    if (error instanceof Refusal) return { ok: false, problem: error.problem };
    if (error instanceof RangeError)
      return { ok: false, problem: { kind: 'limit', keyword: 'nesting', path: '$', message: 'The schema is nested too deeply to read.' } };
    throw error;
  }
}

/** GBNF text for a schema's grammar, `root` first, ending with `suffix` (a literal) when given. */
export function grammarText(rules: Rules, suffix?: string): string {
  if (suffix === undefined) return renderGrammar(rules);
  const withSuffix: Rules = new Map(rules);
  withSuffix.set('root', sequence(rules.get('root') as GrammarNode, literal(suffix)));
  return renderGrammar(withSuffix);
}
