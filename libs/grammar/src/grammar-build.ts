import type { JsonObject, JsonValue } from '@app/contracts';
import type { GrammarNode } from './grammar-ast';

/**
 * The one JSON Schema checker and grammar builder, for tool parameters and response formats
 * alike. A schema is `invalid` (a `$ref` to nothing, a cycle no value can end, a pattern that is
 * no regular expression, bounds nothing satisfies), over a `limit` (SCHEMA_LIMITS), or uses a
 * keyword the grammar cannot enforce (`unsupported`): refused when strict, else noted and left
 * out, the grammar enforcing the rest.
 */
export interface SchemaProblem {
  kind: 'invalid' | 'limit' | 'unsupported';
  /** The keyword (or the limit's name) at fault. */
  keyword: string;
  /** Where it stands: `$.properties.when.format`. */
  path: string;
  message: string;
}

/**
 * What the grammars of the types (string-, number- and container-grammar.ts) use of the one builder
 * behind schemaGrammar: its refusals, its rules and names, its limits' counters, and `visit` for
 * the schemas inside a schema.
 */
export interface GrammarBuild {
  fail(kind: SchemaProblem['kind'], keyword: string, path: string, message: string): never;
  /** A keyword the grammar cannot enforce: refused when strict, else left out and noted. */
  unsupported(keyword: string, path: string, message: string): void;
  visit(schema: JsonValue, path: string, depth: number): GrammarNode;
  anyValue(): GrammarNode;
  anyString(): GrammarNode;
  /** A keyword left to the model whatever `strict` says (an unknown `format`). */
  note(keyword: string, path: string, message: string): void;
  /** A count keyword's value (`minItems`, …), checked and within the repetition limit. */
  length(schema: JsonObject, keyword: string, path: string): number | undefined;
  repeat(item: GrammarNode, min: number, max: number | undefined, name: string, separator?: GrammarNode): GrammarNode;
  /** A new rule named after `base` (made unique); returns its name. */
  newRule(base: string, node: GrammarNode): string;
  /** A rule of a name the caller chose and refers to before it is set (a remainder machine's). */
  setRule(name: string, node: GrammarNode): void;
  /** A node as itself when small, else as a rule of its own. */
  named(node: GrammarNode, name: string): GrammarNode;
  /** Counts declared properties against the whole schema's limit. */
  countProperties(count: number, path: string): void;
}
