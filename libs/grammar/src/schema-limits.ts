/**
 * What one JSON Schema (a tool's parameters, a response format) may ask for. Beyond these the
 * request is refused with 400 naming the limit: past them a grammar gets slow to build and,
 * worse, slow to sample, and every sequence the worker generates waits on it.
 */
export const SCHEMA_LIMITS = {
  /** Characters of the schema as JSON. */
  size: 200_000,
  /** Values of one `enum`. */
  enumValues: 1_000,
  /** `enum` values in the whole schema. */
  totalEnumValues: 5_000,
  /** Alternatives of one `anyOf` / `oneOf` (or of a type list). */
  branches: 256,
  /** Alternatives in the whole schema. */
  totalBranches: 2_000,
  /** Properties declared in the whole schema. */
  properties: 5_000,
  /** Schemas nested in schemas. */
  nesting: 32,
  /** Any count: `minLength`, `maxLength`, `minItems`, `maxItems`. */
  repetition: 100_000,
  /** Schemas visited while building (merging `allOf`, `anyOf` beside other keywords, `$ref` with siblings). */
  work: 50_000,
  /** Symbols of the grammar once llama.cpp has written out every count. */
  grammarSymbols: 500_000,
  /** Characters of the shortest value the schema allows: every answer under it is at least this long. */
  shortestValue: 65_536,
} as const;

export type SchemaLimit = keyof typeof SCHEMA_LIMITS;
