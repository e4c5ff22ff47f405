import type { GrammarSchema, JsonValue } from './generation-options';
import { isJsonObject } from './value-guards';

/**
 * Reduces a JSON Schema (as OpenAI's clients send it: `response_format.json_schema.schema`,
 * `tools[].function.parameters`) to the subset that node-llama-cpp's JSON-schema grammar
 * enforces. The rule is exactness: every value the grammar can produce must satisfy the original
 * schema. So annotations are dropped, keywords with an exact equivalent are rewritten, and any
 * keyword that restricts values in a way the grammar cannot enforce is refused by name.
 */
export type SchemaReduction = { ok: true; schema: GrammarSchema } | { ok: false; keyword: string; path: string };

/** Describe a value and change nothing it may be. */
const ANNOTATIONS = new Set(['title', 'description', 'default', 'examples', '$schema', '$id', '$comment', 'deprecated', 'readOnly', 'writeOnly']);
/** Keywords the grammar honours as they are, by the type they apply to. */
const KEPT = new Set(['type', 'enum', 'const', 'minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties', 'required']);
const FORMATS = new Set(['date-time', 'date', 'time']);
/**
 * Bounds no tighter than JavaScript's safe integers (what zod writes for every `.int()`) say
 * "a number a program can hold", not a range the answer must keep to: dropped. The grammar
 * writes at most 16 digits, so a generated integer beyond them is possible in principle, never
 * seen in practice; any tighter bound is refused, because the grammar cannot keep to it.
 */
const LOWER_BOUNDS = new Set(['minimum', 'exclusiveMinimum']);
const UPPER_BOUNDS = new Set(['maximum', 'exclusiveMaximum']);
const isLooseBound = (keyword: string, value: JsonValue): boolean =>
  typeof value === 'number' &&
  ((LOWER_BOUNDS.has(keyword) && value <= Number.MIN_SAFE_INTEGER) || (UPPER_BOUNDS.has(keyword) && value >= Number.MAX_SAFE_INTEGER));
const SIMPLE_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null']);

class Unsupported extends Error {
  constructor(
    readonly keyword: string,
    readonly path: string,
  ) {
    super(`unsupported ${keyword} at ${path}`);
  }
}

/** `#/definitions/x` (what openai's zod helper writes) and `#/$defs/x` both become `#/$defs/x`. */
function rewriteRef(ref: JsonValue, path: string): string {
  const match = typeof ref === 'string' ? /^#\/(?:\$defs|definitions)\/([^/]+)$/.exec(ref) : null;
  if (!match) throw new Unsupported('$ref', path);
  return `#/$defs/${match[1]}`;
}

function reduce(schema: JsonValue, path: string): GrammarSchema {
  if (schema === true) return anyValue();
  if (!isJsonObject(schema)) throw new Unsupported('schema', path);
  const reduced: GrammarSchema = {};
  let allOf: GrammarSchema | undefined;
  for (const [keyword, value] of Object.entries(schema)) {
    const at = `${path}.${keyword}`;
    if (ANNOTATIONS.has(keyword) || isLooseBound(keyword, value)) continue;
    if (KEPT.has(keyword)) reduced[keyword] = value;
    else if (keyword === 'format') {
      // The grammar enforces only these; any other format would be an unchecked promise.
      if (typeof value !== 'string' || !FORMATS.has(value)) throw new Unsupported(`format: ${JSON.stringify(value)}`, at);
      reduced.format = value;
    } else if (keyword === 'properties' || keyword === '$defs' || keyword === 'definitions') {
      if (!isJsonObject(value)) throw new Unsupported(keyword, at);
      reduced[keyword === 'properties' ? 'properties' : '$defs'] = Object.fromEntries(
        Object.entries(value).map(([name, child]) => [name, reduce(child, `${at}.${name}`)]),
      );
    } else if (keyword === 'items' || keyword === 'additionalProperties') {
      reduced[keyword] = typeof value === 'boolean' ? value : reduce(value, at);
    } else if (keyword === 'prefixItems' || keyword === 'anyOf') {
      if (!Array.isArray(value)) throw new Unsupported(keyword, at);
      // A generated value matches at least one alternative, which is what anyOf asks.
      reduced[keyword === 'anyOf' ? 'oneOf' : keyword] = value.map((child, index) => reduce(child, `${at}[${index}]`));
    } else if (keyword === 'allOf' && Array.isArray(value) && value.length === 1) {
      allOf = reduce(value[0], `${at}[0]`);
    } else if (keyword === '$ref') reduced.$ref = rewriteRef(value, at);
    else throw new Unsupported(keyword, at);
  }
  // The grammar reads `oneOf` and `$ref` before anything beside them, so what stands beside them
  // would not be enforced; one allOf is its schema only when nothing else constrains.
  if (allOf !== undefined) {
    if (constraints(reduced).length > 0) throw new Unsupported('allOf', `${path}.allOf`);
    Object.assign(reduced, allOf);
  }
  const readAlone = reduced.oneOf !== undefined ? 'oneOf' : reduced.$ref !== undefined ? '$ref' : undefined;
  if (readAlone !== undefined && constraints(reduced).length > 1) {
    const keyword = readAlone === 'oneOf' ? 'anyOf' : '$ref'; // a oneOf here was written as anyOf
    throw new Unsupported(keyword, `${path}.${keyword}`);
  }
  return splitTypeList(withImplicitType(reduced));
}

/** The keywords of a reduced schema that constrain its values. */
function constraints(schema: GrammarSchema): string[] {
  return Object.keys(schema).filter((keyword) => keyword !== '$defs');
}

/** Keywords that choose the values a schema allows; with none of them the grammar allows only `null`. */
const SELECTORS = ['type', 'enum', 'const', 'oneOf', '$ref'];
const ALL_TYPES = ['string', 'number', 'boolean', 'null', 'object', 'array'];

/**
 * A schema without a type allows values of every type, its other keywords constraining only the
 * values of the types they apply to (`{}` or a bare `properties`); the grammar needs the types
 * said, or it writes `null` alone.
 */
function withImplicitType(schema: GrammarSchema): GrammarSchema {
  if (SELECTORS.some((keyword) => schema[keyword] !== undefined)) return schema;
  if (constraints(schema).length === 0) return { ...anyValue(), ...schema };
  return { ...schema, type: ALL_TYPES };
}

/** The keywords that constrain values of each type; the others do not apply to it. */
const KEYWORDS_OF_TYPE: Record<string, string[]> = {
  object: ['properties', 'required', 'additionalProperties', 'minProperties', 'maxProperties'],
  array: ['items', 'prefixItems', 'minItems', 'maxItems'],
  string: ['minLength', 'maxLength', 'format'],
};
const TYPE_KEYWORDS = Object.values(KEYWORDS_OF_TYPE).flat();

/**
 * The grammar applies a type list's types bare: `type: ["object", "null"]` writes no properties
 * and `type: ["string", "null"]` no length limit. The same as one alternative per type, each with
 * its own keywords. `enum` and `const` the grammar reads first and keeps to exactly.
 */
function splitTypeList(schema: GrammarSchema): GrammarSchema {
  const { type, $defs } = schema;
  if (!Array.isArray(type) || schema.enum !== undefined || schema.const !== undefined) return schema;
  const bare = type.every((name) => typeof name === 'string' && SIMPLE_TYPES.has(name)) && TYPE_KEYWORDS.every((keyword) => schema[keyword] === undefined);
  if (bare) return schema;
  const oneOf = type.map((name) => {
    const alternative: GrammarSchema = { type: name };
    for (const keyword of KEYWORDS_OF_TYPE[name as string] ?? []) if (schema[keyword] !== undefined) alternative[keyword] = schema[keyword];
    return alternative;
  });
  return $defs === undefined ? { oneOf } : { oneOf, $defs };
}

/** `{}` or `true`: any JSON value at all. */
function anyValue(): GrammarSchema {
  return { oneOf: [{ type: ['string', 'number', 'boolean', 'null'] }, { type: 'object', additionalProperties: true }, { type: 'array' }] };
}

/**
 * The grammar subset of `schema`, or the first keyword it cannot enforce with where it stands
 * (`$.properties.age.minimum`). `{}` and `true` mean any value, wherever they stand.
 */
export function reduceJsonSchema(schema: JsonValue): SchemaReduction {
  try {
    return { ok: true, schema: reduce(schema, '$') };
  } catch (error) {
    if (error instanceof Unsupported) return { ok: false, keyword: error.keyword, path: error.path };
    throw error;
  }
}
