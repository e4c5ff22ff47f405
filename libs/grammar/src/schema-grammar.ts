import { isJsonObject } from '@app/contracts';
import type { JsonObject, JsonValue } from '@app/contracts';
import { EMPTY, chars, choice, expandedSize, grammarFault, literal, optional, renderGrammar, rule, sequence, shortestLength } from './grammar-ast';
import type { GrammarNode, Rules } from './grammar-ast';
import { branchesExclusive, jsonTypeOf } from './exclusive-branches';
import { integerRange } from './integer-range';
import { anyNumber, integerBounds, numberRange } from './number-range';
import type { Bound } from './number-range';
import { PatternProblem, fitLength, jsonChars, lengthRange, parsePattern, regexGrammar } from './regex-grammar';
import type { RegexNode } from './regex-grammar';
import { SCHEMA_LIMITS } from './schema-limits';
import type { SchemaLimit } from './schema-limits';
import { INTEGER_FORMATS, STRING_FORMATS } from './string-formats';

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

export type SchemaGrammar = { ok: true; rules: Rules; ignored: SchemaProblem[] } | { ok: false; problem: SchemaProblem };

export interface SchemaGrammarOptions {
  /** OpenAI's `strict`: a keyword the grammar cannot enforce refuses the schema. */
  strict: boolean;
}

class Refusal extends Error {
  constructor(readonly problem: SchemaProblem) {
    super(problem.message);
  }
}

/** Describe a value and change nothing it may be. */
const ANNOTATIONS = new Set([
  'title',
  'description',
  'default',
  'examples',
  'example',
  '$schema',
  '$id',
  '$comment',
  '$anchor',
  'deprecated',
  'readOnly',
  'writeOnly',
  'contentEncoding',
  'contentMediaType',
  '$defs',
  'definitions',
  'discriminator',
  'xml',
  'externalDocs',
]);
/** Keywords that restrict values in ways a grammar does not follow here. */
const UNENFORCED = new Set([
  'not',
  'if',
  'then',
  'else',
  'dependentRequired',
  'dependentSchemas',
  'dependencies',
  'patternProperties',
  'unevaluatedProperties',
  'unevaluatedItems',
  'contains',
  'minContains',
  'maxContains',
  'uniqueItems',
  'minProperties',
  'maxProperties',
  '$dynamicRef',
  '$recursiveRef',
]);
const TYPES = ['string', 'number', 'integer', 'boolean', 'null', 'object', 'array'] as const;
type TypeName = (typeof TYPES)[number];
const KEYWORDS_OF: Record<TypeName, string[]> = {
  object: ['properties', 'required', 'additionalProperties', 'propertyNames'],
  array: ['items', 'prefixItems', 'minItems', 'maxItems', 'additionalItems'],
  string: ['minLength', 'maxLength', 'pattern', 'format'],
  number: ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'],
  integer: [],
  boolean: [],
  null: [],
};
KEYWORDS_OF.integer = KEYWORDS_OF.number;

const WS = optional(literal(' '));
const QUOTE = literal('"');
/** A character of a free string: any but the ones JSON escapes, or the escapes a model would write. */
const STRING_CHAR = choice(
  chars([
    [0x20, 0x21],
    [0x23, 0x5b],
    [0x5d, 0x7e],
    [0xa0, 0xd7ff],
    [0xe000, 0x10ffff],
  ]),
  literal('\\"'),
  literal('\\\\'),
  literal('\\n'),
  literal('\\t'),
);
/** Counts up to this are written as llama.cpp's `{m,n}`; larger ones in chunks (see repeat). */
const DIRECT_COUNT = 256;
const CHUNK = 64;

const describe = (value: JsonValue): string => JSON.stringify(value).slice(0, 60);

class SchemaGrammarBuilder {
  readonly rules: Rules = new Map();
  readonly ignored: SchemaProblem[] = [];
  private readonly refRules = new Map<string, string>();
  private readonly usedNames = new Set<string>(['root', 'any-value', 'any-string']);
  private enumValues = 0;
  private branches = 0;
  private properties = 0;
  private work = 0;

  constructor(
    private readonly root: JsonValue,
    private readonly strict: boolean,
  ) {}

  fail(kind: SchemaProblem['kind'], keyword: string, path: string, message: string): never {
    throw new Refusal({ kind, keyword, path, message });
  }

  private overLimit(limit: SchemaLimit, path: string, what: string): never {
    this.fail('limit', limit, path, `${what} exceeds the limit of ${SCHEMA_LIMITS[limit]} (${limit}).`);
  }

  /** A keyword the grammar cannot enforce: refused when strict, else left out and noted. */
  private unsupported(keyword: string, path: string, message: string): void {
    const problem: SchemaProblem = { kind: 'unsupported', keyword, path, message };
    if (this.strict) throw new Refusal(problem);
    this.ignored.push(problem);
  }

  private count(limit: 'enumValues' | 'branches', n: number, path: string, what: string): void {
    if (n > SCHEMA_LIMITS[limit]) this.overLimit(limit, path, what);
    if (limit === 'enumValues' && (this.enumValues += n) > SCHEMA_LIMITS.totalEnumValues)
      this.overLimit('totalEnumValues', path, 'The enum values of the schema');
    if (limit === 'branches' && (this.branches += n) > SCHEMA_LIMITS.totalBranches) this.overLimit('totalBranches', path, 'The alternatives of the schema');
  }

  private countCount(value: number, path: string): void {
    if (value > SCHEMA_LIMITS.repetition) this.overLimit('repetition', path, `A count of ${value}`);
  }

  newRule(base: string, node: GrammarNode): string {
    let name =
      base
        .replace(/[^a-zA-Z0-9-]+/g, '-')
        .replace(/^-+|-+$/g, '')
        .slice(0, 40) || 'r';
    if (this.usedNames.has(name)) {
      let i = 1;
      while (this.usedNames.has(`${name}-${i}`)) i++;
      name = `${name}-${i}`;
    }
    this.usedNames.add(name);
    this.rules.set(name, node);
    return name;
  }

  /** `item` from `min` to `max` times, with `separator` between; large counts in chunks so llama.cpp writes out little. */
  repeat(item: GrammarNode, min: number, max: number | undefined, name: string, separator?: GrammarNode): GrammarNode {
    if (max === 0) return EMPTY;
    const simple = item.kind === 'rule' || item.kind === 'chars' || (item.kind === 'literal' && item.text.length <= 8);
    const unit = simple ? item : rule(this.newRule(name, item));
    if (separator) {
      const rest = this.repeat(sequence(separator, unit), Math.max(min - 1, 0), max === undefined ? undefined : max - 1, `${name}-more`);
      return min === 0 ? optional(sequence(unit, rest)) : sequence(unit, rest);
    }
    if ((max ?? min) <= DIRECT_COUNT) return { kind: 'repeat', item: unit, min, max };
    // min copies (whole chunks of CHUNK, then the rest), then up to max - min more.
    const chunk = rule(this.newRule(`${name}-chunk`, { kind: 'repeat', item: unit, min: CHUNK, max: CHUNK }));
    const minChunks = Math.floor(min / CHUNK);
    const least = sequence(minChunks > 0 ? this.repeat(chunk, minChunks, minChunks, `${name}-chunks`) : EMPTY, {
      kind: 'repeat',
      item: unit,
      min: min % CHUNK,
      max: min % CHUNK,
    });
    if (max === undefined) return sequence(least, { kind: 'repeat', item: unit, min: 0, max: undefined });
    const extra = max - min;
    if (extra <= DIRECT_COUNT) return sequence(least, { kind: 'repeat', item: unit, min: 0, max: extra });
    // Up to `extra`: fewer than q whole chunks and any rest, or q chunks and at most the remainder.
    const q = Math.floor(extra / CHUNK);
    const upTo = choice(
      sequence(this.repeat(chunk, 0, q - 1, `${name}-chunks`), { kind: 'repeat', item: unit, min: 0, max: CHUNK - 1 }),
      sequence(this.repeat(chunk, q, q, `${name}-chunks`), { kind: 'repeat', item: unit, min: 0, max: extra % CHUNK }),
    );
    return sequence(least, upTo);
  }

  /** The value grammar of a schema. */
  visit(schema: JsonValue, path: string, depth: number): GrammarNode {
    if (++this.work > SCHEMA_LIMITS.work) this.overLimit('work', path, 'The work of reading the schema');
    if (depth > SCHEMA_LIMITS.nesting) this.overLimit('nesting', path, 'The nesting of schemas');
    if (schema === true) return this.anyValue();
    if (schema === false) this.fail('invalid', 'false', path, `The schema at ${path} is false: no value satisfies it.`);
    if (!isJsonObject(schema)) this.fail('invalid', 'schema', path, `The schema at ${path} is not an object.`);

    for (const keyword of Object.keys(schema)) {
      if (UNENFORCED.has(keyword) && !(keyword === 'uniqueItems' && schema[keyword] === false))
        this.unsupported(keyword, `${path}.${keyword}`, `'${keyword}' (at ${path}.${keyword}) is not enforced by structured output here.`);
    }
    if (schema.$ref !== undefined) return this.visitRef(schema, path, depth);
    if (schema.allOf !== undefined) return this.visit(this.mergeAllOf(schema, path, depth), path, depth + 1);
    const union = schema.anyOf ?? schema.oneOf;
    if (union !== undefined) {
      const keyword = schema.anyOf !== undefined ? 'anyOf' : 'oneOf';
      if (schema.anyOf !== undefined && schema.oneOf !== undefined)
        this.unsupported('oneOf', `${path}.oneOf`, `'oneOf' beside 'anyOf' (at ${path}) is not enforced here.`);
      if (!Array.isArray(union) || union.length === 0)
        this.fail('invalid', keyword, `${path}.${keyword}`, `'${keyword}' at ${path} must be a non-empty array of schemas.`);
      this.count('branches', union.length, `${path}.${keyword}`, `The ${union.length} alternatives of '${keyword}'`);
      const siblings = this.constraintsBeside(schema, ['anyOf', 'oneOf']);
      const branches = union.map((branch, index) => {
        const at = `${path}.${keyword}[${index}]`;
        return Object.keys(siblings).length === 0 ? branch : this.merge(siblings, this.resolved(branch, at), at);
      });
      if (keyword === 'oneOf' && !branchesExclusive(branches, (branch) => this.resolved(branch, `${path}.oneOf`)))
        this.unsupported(
          'oneOf',
          `${path}.oneOf`,
          `'oneOf' at ${path} has alternatives that one value can match together, which a grammar cannot keep apart; ` +
            `use 'anyOf', or tell them apart by type or by a required property's 'const' values.`,
        );
      return choice(...branches.map((branch, index) => this.visit(branch, `${path}.${keyword}[${index}]`, depth + 1)));
    }
    if (schema.const !== undefined) return this.literals([schema.const], schema, path);
    if (schema.enum !== undefined) {
      if (!Array.isArray(schema.enum) || schema.enum.length === 0) this.fail('invalid', 'enum', `${path}.enum`, `'enum' at ${path} must be a non-empty array.`);
      this.count('enumValues', schema.enum.length, `${path}.enum`, `The ${schema.enum.length} values of 'enum'`);
      return this.literals(schema.enum, schema, path);
    }
    if (Object.keys(this.constraintsBeside(schema, [])).length === 0) return this.anyValue();
    const types = this.typesOf(schema, path);
    if (types.length > 1) this.count('branches', types.length, `${path}.type`, 'The types');
    return choice(...types.map((type) => this.visitType(type, schema, path, depth)));
  }

  private anyValue(): GrammarNode {
    if (!this.rules.has('any-value')) {
      this.rules.set('any-value', EMPTY);
      const string = sequence(QUOTE, { kind: 'repeat', item: STRING_CHAR, min: 0, max: undefined }, QUOTE);
      const member = sequence(string, literal(':'), WS, rule('any-value'));
      const object = sequence(
        literal('{'),
        WS,
        optional(sequence(member, { kind: 'repeat', item: sequence(literal(','), WS, member), min: 0, max: undefined })),
        WS,
        literal('}'),
      );
      const array = sequence(
        literal('['),
        WS,
        optional(sequence(rule('any-value'), { kind: 'repeat', item: sequence(literal(','), WS, rule('any-value')), min: 0, max: undefined })),
        WS,
        literal(']'),
      );
      this.rules.set('any-value', choice(object, array, string, anyNumber(), literal('true'), literal('false'), literal('null')));
    }
    return rule('any-value');
  }

  /** The keywords beside `except` that constrain values (annotations and definitions left out). */
  private constraintsBeside(schema: JsonObject, except: string[]): JsonObject {
    return Object.fromEntries(Object.entries(schema).filter(([keyword]) => !except.includes(keyword) && !ANNOTATIONS.has(keyword) && !UNENFORCED.has(keyword)));
  }

  private pointer(ref: string, path: string): JsonValue {
    if (!ref.startsWith('#')) this.fail('invalid', '$ref', path, `'$ref' ${describe(ref)} at ${path} is not a reference within the schema ('#/...').`);
    let target: JsonValue = this.root;
    const pointer = decodeURIComponent(ref.slice(1));
    if (pointer !== '' && !pointer.startsWith('/')) this.fail('invalid', '$ref', path, `'$ref' ${describe(ref)} at ${path} is not a JSON pointer.`);
    for (const token of pointer === '' ? [] : pointer.slice(1).split('/')) {
      const key = token.replace(/~1/g, '/').replace(/~0/g, '~');
      const next: JsonValue | undefined = Array.isArray(target) ? target[Number(key)] : isJsonObject(target) ? target[key] : undefined;
      if (next === undefined) this.fail('invalid', '$ref', path, `'$ref' ${describe(ref)} at ${path} points to nothing in the schema.`);
      target = next;
    }
    return target;
  }

  /** A `$ref`'s target when `branch` is one, else `branch` (for merging with what stands beside it). */
  private resolved(branch: JsonValue, path: string): JsonValue {
    let seen = 0;
    while (isJsonObject(branch) && typeof branch.$ref === 'string' && Object.keys(this.constraintsBeside(branch, ['$ref'])).length === 0) {
      if (++seen > SCHEMA_LIMITS.nesting) this.fail('invalid', '$ref', path, `The '$ref' chain at ${path} never reaches a schema.`);
      branch = this.pointer(branch.$ref, path);
    }
    return branch;
  }

  private visitRef(schema: JsonObject, path: string, depth: number): GrammarNode {
    const ref = schema.$ref;
    if (typeof ref !== 'string') this.fail('invalid', '$ref', `${path}.$ref`, `'$ref' at ${path} must be a string.`);
    const target = this.pointer(ref, `${path}.$ref`);
    const siblings = this.constraintsBeside(schema, ['$ref']);
    if (Object.keys(siblings).length > 0) return this.visit(this.merge(siblings, this.resolved(target, path), path), path, depth + 1);
    let name = this.refRules.get(ref);
    if (name === undefined) {
      name = this.newRule(`ref-${ref.slice(1).split('/').pop() ?? 'root'}`, EMPTY);
      this.refRules.set(ref, name);
      this.rules.set(name, this.visit(target, `${path}.$ref(${ref})`, depth + 1));
    }
    return rule(name);
  }

  /** One schema with every `allOf` member's keywords (objects' properties joined, bounds tightened). */
  private mergeAllOf(schema: JsonObject, path: string, depth: number): JsonObject {
    const members = schema.allOf;
    if (!Array.isArray(members) || members.length === 0)
      this.fail('invalid', 'allOf', `${path}.allOf`, `'allOf' at ${path} must be a non-empty array of schemas.`);
    this.count('branches', members.length, `${path}.allOf`, `The ${members.length} members of 'allOf'`);
    if (depth > SCHEMA_LIMITS.nesting) this.overLimit('nesting', path, 'The nesting of schemas');
    let merged: JsonObject = Object.fromEntries(Object.entries(schema).filter(([keyword]) => keyword !== 'allOf'));
    members.forEach((member, index) => {
      let resolved = this.resolved(member, `${path}.allOf[${index}]`);
      if (isJsonObject(resolved) && resolved.allOf !== undefined) resolved = this.mergeAllOf(resolved, `${path}.allOf[${index}]`, depth + 1);
      merged = this.merge(merged, resolved, `${path}.allOf[${index}]`);
    });
    return merged;
  }

  /** Both schemas at once, as far as one schema can say it. */
  private merge(base: JsonObject, extra: JsonValue, path: string): JsonObject {
    if (++this.work > SCHEMA_LIMITS.work) this.overLimit('work', path, 'The work of reading the schema');
    if (extra === true) return base;
    if (!isJsonObject(extra)) this.fail('invalid', 'allOf', path, `The schema at ${path} is not an object.`);
    const out: JsonObject = { ...base };
    for (const [keyword, value] of Object.entries(extra)) {
      const mine = out[keyword];
      if (mine === undefined || ANNOTATIONS.has(keyword)) out[keyword] = value;
      else if (keyword === 'properties' && isJsonObject(mine) && isJsonObject(value)) {
        const properties: JsonObject = { ...mine };
        for (const [name, child] of Object.entries(value)) properties[name] = properties[name] === undefined ? child : { allOf: [properties[name], child] };
        out.properties = properties;
      } else if (keyword === 'required' && Array.isArray(mine) && Array.isArray(value)) out.required = [...new Set([...mine, ...value])];
      else if (keyword === 'type') {
        const a = Array.isArray(mine) ? mine : [mine];
        const b = Array.isArray(value) ? value : [value];
        const both = a
          .filter((type) => b.includes(type) || (type === 'integer' && b.includes('number')))
          .concat(b.filter((type) => type === 'integer' && a.includes('number')));
        if (both.length === 0) this.fail('invalid', 'type', path, `The types at ${path} have nothing in common: no value satisfies them.`);
        out.type = [...new Set(both)];
      } else if (['minimum', 'minLength', 'minItems', 'exclusiveMinimum'].includes(keyword) && typeof mine === 'number' && typeof value === 'number')
        out[keyword] = Math.max(mine, value);
      else if (['maximum', 'maxLength', 'maxItems', 'exclusiveMaximum'].includes(keyword) && typeof mine === 'number' && typeof value === 'number')
        out[keyword] = Math.min(mine, value);
      else if (keyword === 'enum' && Array.isArray(mine) && Array.isArray(value))
        out.enum = mine.filter((item) => value.some((other) => JSON.stringify(other) === JSON.stringify(item)));
      else if (JSON.stringify(mine) !== JSON.stringify(value)) {
        // Two of anyOf, pattern, items...: the grammar keeps one (the first).
        this.unsupported(keyword, `${path}.${keyword}`, `'${keyword}' given twice by 'allOf' (at ${path}) is not enforced here.`);
      }
    }
    return out;
  }

  private typesOf(schema: JsonObject, path: string): TypeName[] {
    const declared = schema.type;
    let types: TypeName[];
    if (declared === undefined) {
      // No type: every type allows it; the grammar writes those the keywords speak of.
      const implied = TYPES.filter((type) => type !== 'integer' && KEYWORDS_OF[type].some((keyword) => schema[keyword] !== undefined));
      types = implied.length > 0 ? implied : [...TYPES.filter((type) => type !== 'integer')];
    } else {
      const list = Array.isArray(declared) ? declared : [declared];
      if (list.length === 0) this.fail('invalid', 'type', `${path}.type`, `'type' at ${path} is an empty list.`);
      for (const type of list)
        if (typeof type !== 'string' || !(TYPES as readonly string[]).includes(type))
          this.fail('invalid', 'type', `${path}.type`, `'type' at ${path} names ${describe(type)}, which is not a JSON Schema type.`);
      types = [...new Set(list as TypeName[])];
      if (types.includes('number')) types = types.filter((type) => type !== 'integer');
    }
    if (schema.nullable === true && !types.includes('null')) types.push('null');
    return types;
  }

  /** Enum or const values, as their JSON text, that have a type the schema allows. */
  private literals(values: JsonValue[], schema: JsonObject, path: string): GrammarNode {
    const allowed = schema.type === undefined ? undefined : this.typesOf(schema, path);
    const kept = values.filter(
      (value) => allowed === undefined || allowed.includes(jsonTypeOf(value)) || (jsonTypeOf(value) === 'integer' && allowed.includes('number')),
    );
    if (kept.length === 0)
      this.fail('invalid', schema.const !== undefined ? 'const' : 'enum', path, `No value of 'enum'/'const' at ${path} has the schema's type.`);
    return textChoice([...new Set(kept.map((value) => JSON.stringify(value)))]);
  }

  private visitType(type: TypeName, schema: JsonObject, path: string, depth: number): GrammarNode {
    switch (type) {
      case 'null':
        return literal('null');
      case 'boolean':
        return choice(literal('true'), literal('false'));
      case 'string':
        return this.visitString(schema, path);
      case 'number':
      case 'integer':
        return this.visitNumber(type, schema, path);
      case 'array':
        return this.visitArray(schema, path, depth);
      case 'object':
        return this.visitObject(schema, path, depth);
    }
  }

  private length(schema: JsonObject, keyword: string, path: string): number | undefined {
    const value = schema[keyword];
    if (value === undefined) return undefined;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0)
      this.fail('invalid', keyword, `${path}.${keyword}`, `'${keyword}' at ${path} must be a non-negative integer.`);
    this.countCount(value, `${path}.${keyword}`);
    return value;
  }

  private visitString(schema: JsonObject, path: string): GrammarNode {
    const min = this.length(schema, 'minLength', path) ?? 0;
    const max = this.length(schema, 'maxLength', path);
    if (max !== undefined && max < min)
      this.fail('invalid', 'maxLength', `${path}.maxLength`, `'maxLength' at ${path} is below 'minLength': no string satisfies both.`);
    let regex: RegexNode | undefined;
    let source: 'pattern' | 'format' | undefined;
    if (schema.pattern !== undefined) {
      if (typeof schema.pattern !== 'string') this.fail('invalid', 'pattern', `${path}.pattern`, `'pattern' at ${path} must be a string.`);
      regex = this.pattern(schema.pattern, `${path}.pattern`);
      if (regex) source = 'pattern';
    }
    const format = schema.format;
    if (format !== undefined && typeof format === 'string' && STRING_FORMATS[format] !== undefined && regex === undefined) {
      regex = parsePattern(STRING_FORMATS[format]);
      source = 'format';
    } else if (format !== undefined && typeof format === 'string' && STRING_FORMATS[format] === undefined && INTEGER_FORMATS[format] === undefined) {
      // Formats are annotations unless a validator knows them; one no grammar here knows is left to the model.
      this.ignored.push({
        kind: 'unsupported',
        keyword: 'format',
        path: `${path}.format`,
        message: `format ${describe(format)} (at ${path}) is not enforced here.`,
      });
    }
    if (regex !== undefined) {
      const fitted = fitLength(regex, min, max);
      if (fitted === undefined) {
        this.unsupported(min > 0 ? 'minLength' : 'maxLength', path, `'minLength'/'maxLength' together with the ${source} at ${path} are not enforced here.`);
        return sequence(QUOTE, regexGrammar(regex), QUOTE);
      }
      const [, hi] = lengthRange(fitted);
      if (hi === undefined && max !== undefined) return sequence(QUOTE, regexGrammar(regex), QUOTE);
      return sequence(QUOTE, regexGrammar(fitted), QUOTE);
    }
    if (min === 0 && max === undefined) return rule(this.stringRule());
    return sequence(QUOTE, this.repeat(STRING_CHAR, min, max, 'char'), QUOTE);
  }

  private stringRule(): string {
    if (!this.rules.has('any-string')) {
      this.rules.set('any-string', sequence(QUOTE, { kind: 'repeat', item: STRING_CHAR, min: 0, max: undefined }, QUOTE));
    }
    return 'any-string';
  }

  /** A pattern as a grammar, or undefined where it cannot be one (noted, or refused when strict). */
  private pattern(pattern: string, path: string): RegexNode | undefined {
    try {
      return parsePattern(pattern);
    } catch (error) {
      if (!(error instanceof PatternProblem)) throw error;
      if (error.reason === 'invalid') this.fail('invalid', 'pattern', path, `'pattern' at ${path} is not a valid regular expression: ${error.message}.`);
      if (error.reason === 'limit') this.fail('limit', 'pattern', path, `'pattern' at ${path} is too complex for structured output: ${error.message}.`);
      this.unsupported('pattern', path, `'pattern' at ${path} uses ${error.message}, which a grammar cannot express.`);
      return undefined;
    }
  }

  private bound(schema: JsonObject, keyword: string, path: string): number | undefined {
    const value = schema[keyword];
    if (value === undefined || typeof value === 'boolean') return undefined;
    if (typeof value !== 'number') this.fail('invalid', keyword, `${path}.${keyword}`, `'${keyword}' at ${path} must be a number.`);
    return value;
  }

  private visitNumber(type: 'number' | 'integer', schema: JsonObject, path: string): GrammarNode {
    // Draft 4 wrote exclusive bounds as booleans beside minimum / maximum.
    const minimum = this.bound(schema, 'minimum', path);
    const maximum = this.bound(schema, 'maximum', path);
    const exclusiveMinimum = this.bound(schema, 'exclusiveMinimum', path);
    const exclusiveMaximum = this.bound(schema, 'exclusiveMaximum', path);
    const lower = tighter(
      [
        minimum === undefined ? undefined : { value: minimum, exclusive: schema.exclusiveMinimum === true },
        exclusiveMinimum === undefined ? undefined : { value: exclusiveMinimum, exclusive: true },
      ],
      'lower',
    );
    const upper = tighter(
      [
        maximum === undefined ? undefined : { value: maximum, exclusive: schema.exclusiveMaximum === true },
        exclusiveMaximum === undefined ? undefined : { value: exclusiveMaximum, exclusive: true },
      ],
      'upper',
    );
    const multipleOf = this.bound(schema, 'multipleOf', path);
    if (multipleOf !== undefined && !(multipleOf > 0)) this.fail('invalid', 'multipleOf', `${path}.multipleOf`, `'multipleOf' at ${path} must be above 0.`);
    const format = typeof schema.format === 'string' ? INTEGER_FORMATS[schema.format] : undefined;
    const wholeMultiple = multipleOf !== undefined && Number.isInteger(multipleOf);
    // A fraction whose reciprocal is whole (0.5, 0.01): whole numbers are multiples of it, and
    // validators' floating-point division agrees for them (it does not for 2.3 and 0.01).
    const fractionOfOne = multipleOf !== undefined && !wholeMultiple && Number.isInteger(1 / multipleOf);
    if (type === 'integer' || format !== undefined || wholeMultiple || fractionOfOne) {
      let { min, max } = integerBounds(lower, upper);
      if (format) {
        min = min === undefined || min < format[0] ? format[0] : min;
        max = max === undefined || max > format[1] ? format[1] : max;
      }
      if (min !== undefined && max !== undefined && min > max)
        this.fail('invalid', 'minimum', path, `The bounds at ${path} leave no ${type === 'integer' ? 'integer' : 'number the grammar can write'}.`);
      if (multipleOf !== undefined && wholeMultiple && multipleOf > 1) return this.multiples(BigInt(multipleOf), min, max, path);
      if (multipleOf !== undefined && !wholeMultiple && !Number.isInteger(1 / multipleOf))
        this.unsupported('multipleOf', `${path}.multipleOf`, `'multipleOf' ${multipleOf} for integers at ${path} is not enforced here.`);
      return min === undefined && max === undefined ? integerRange(undefined, undefined) : integerRange(min, max);
    }
    if (multipleOf !== undefined)
      this.unsupported(
        'multipleOf',
        `${path}.multipleOf`,
        `'multipleOf' ${multipleOf} at ${path} is not enforced here (a whole number, or a fraction such as 0.5 or 0.01, is).`,
      );
    if (lower === undefined && upper === undefined) return anyNumber();
    const node = numberRange(lower, upper);
    if (node.kind === 'choice' && node.items.length === 0)
      this.fail('invalid', 'minimum', path, `The bounds at ${path} leave no number the grammar can write.`);
    return node;
  }

  /** Integers that are multiples of `step` within bounds: listed when few, else the decimal remainder machine. */
  private multiples(step: bigint, min: bigint | undefined, max: bigint | undefined, path: string): GrammarNode {
    if (min !== undefined && max !== undefined) {
      const first = ceilDiv(min, step);
      const last = floorDiv(max, step);
      if (first > last) this.fail('invalid', 'multipleOf', `${path}.multipleOf`, `No multiple of ${step} lies within the bounds at ${path}.`);
      if (last - first < 1000n) {
        const values: string[] = [];
        for (let k = first; k <= last; k++) values.push((k * step).toString());
        return textChoice(values);
      }
    }
    const nonNegative = min !== undefined && min >= 0n;
    if (step <= 1000n && max === undefined && (min === undefined || min <= 0n || min <= step)) {
      const positive = this.remainderMachine(step);
      const zero = min === undefined || min <= 0n ? [literal('0')] : [];
      return choice(...zero, positive, ...(nonNegative || min !== undefined ? [] : [sequence(literal('-'), positive)]));
    }
    this.unsupported('multipleOf', `${path}.multipleOf`, `'multipleOf' ${step} with these bounds (at ${path}) is not enforced here.`);
    return integerRange(min, max);
  }

  /** Positive multiples of `step` in decimal: one rule per remainder, read digit by digit. */
  private remainderMachine(step: bigint): GrammarNode {
    const name = (remainder: bigint): string => `mod${step}-r${remainder}`;
    const m = Number(step);
    for (let r = 0; r < m; r++) {
      const alternatives: GrammarNode[] = r === 0 ? [literal('')] : [];
      for (let d = 0; d <= 9; d++) alternatives.push(sequence(literal(String(d)), rule(name(BigInt((r * 10 + d) % m)))));
      this.usedNames.add(name(BigInt(r)));
      this.rules.set(name(BigInt(r)), choice(...alternatives));
    }
    return choice(...Array.from({ length: 9 }, (_, i) => sequence(literal(String(i + 1)), rule(name(BigInt((i + 1) % m))))));
  }

  private visitArray(schema: JsonObject, path: string, depth: number): GrammarNode {
    const min = this.length(schema, 'minItems', path) ?? 0;
    const max = this.length(schema, 'maxItems', path);
    if (max !== undefined && max < min)
      this.fail('invalid', 'maxItems', `${path}.maxItems`, `'maxItems' at ${path} is below 'minItems': no array satisfies both.`);
    const tuple = Array.isArray(schema.prefixItems) ? schema.prefixItems : Array.isArray(schema.items) ? schema.items : [];
    const rest = Array.isArray(schema.items) ? schema.additionalItems : schema.items;
    const sep = sequence(literal(','), WS);
    const restItem =
      rest === false ? undefined : rest === undefined ? (tuple.length > 0 ? undefined : this.anyValue()) : this.visit(rest, `${path}.items`, depth + 1);
    const positions = tuple.map((item, index) => this.visit(item, `${path}.prefixItems[${index}]`, depth + 1));
    if (positions.length === 0) {
      if (restItem === undefined) {
        if (min > 0) this.fail('invalid', 'minItems', path, `The array at ${path} needs ${min} items and allows none.`);
        return sequence(literal('['), WS, literal(']'));
      }
      return sequence(literal('['), WS, this.repeat(restItem, min, max, `${path}-item`, sep), WS, literal(']'));
    }
    // Tuple positions in order, those past minItems optional, then further items.
    const limit = max === undefined ? positions.length : Math.min(max, positions.length);
    if (min > positions.length && restItem === undefined)
      this.fail('invalid', 'minItems', path, `The array at ${path} needs ${min} items and allows ${positions.length}.`);
    let tail: GrammarNode = EMPTY;
    if (restItem !== undefined && (max === undefined || max > positions.length)) {
      tail = this.repeat(sequence(sep, restItem), Math.max(0, min - positions.length), max === undefined ? undefined : max - positions.length, `${path}-more`);
    }
    for (let index = limit - 1; index >= 1; index--) {
      const part = sequence(sep, positions[index], tail);
      tail = index < min ? part : optional(part);
    }
    const first = sequence(positions[0], tail);
    return sequence(literal('['), WS, min === 0 ? optional(first) : first, WS, literal(']'));
  }

  private visitObject(schema: JsonObject, path: string, depth: number): GrammarNode {
    const declared = schema.properties === undefined ? {} : schema.properties;
    if (!isJsonObject(declared)) this.fail('invalid', 'properties', `${path}.properties`, `'properties' at ${path} must be an object.`);
    const names = Object.keys(declared);
    if ((this.properties += names.length) > SCHEMA_LIMITS.properties) this.overLimit('properties', `${path}.properties`, 'The properties of the schema');
    const required = new Set(Array.isArray(schema.required) ? schema.required.filter((name): name is string => typeof name === 'string') : []);
    for (const name of required) {
      if (!(name in declared) && schema.additionalProperties === false)
        this.fail('invalid', 'required', `${path}.required`, `'${name}' is required at ${path} but no property of that name is allowed.`);
    }
    const member = (name: string, value: GrammarNode): GrammarNode => sequence(literal(`${JSON.stringify(name)}:`), WS, value);
    const members = new Map<string, GrammarNode>();
    for (const name of names)
      members.set(name, member(name, this.named(this.visit(declared[name], `${path}.properties.${name}`, depth + 1), `${path}-${name}`)));
    // Required names without a schema of their own take the additional properties' (or any value).
    const additional = schema.additionalProperties;
    const undeclared = [...required].filter((name) => !(name in declared));
    for (const name of undeclared)
      members.set(name, member(name, isJsonObject(additional) ? this.visit(additional, `${path}.additionalProperties`, depth + 1) : this.anyValue()));

    // Extra keys: where a schema for them is given (a record), or the object declares no property.
    let extra: GrammarNode | undefined;
    const keySchema = schema.propertyNames;
    const freeForm = (additional === true || additional === undefined) && members.size === 0;
    if (additional !== false && (isJsonObject(additional) || keySchema !== undefined || freeForm)) {
      const value = isJsonObject(additional) ? this.named(this.visit(additional, `${path}.additionalProperties`, depth + 1), `${path}-value`) : this.anyValue();
      const key =
        keySchema !== undefined
          ? this.visit(
              isJsonObject(keySchema) &&
                keySchema.type === undefined &&
                keySchema.enum === undefined &&
                keySchema.const === undefined &&
                keySchema.$ref === undefined
                ? { ...keySchema, type: 'string' }
                : keySchema,
              `${path}.propertyNames`,
              depth + 1,
            )
          : keyExcept([...members.keys()]);
      extra = sequence(key, literal(':'), WS, value);
    }

    const requiredMembers = [...members.keys()].filter((name) => required.has(name));
    const optionalMembers = [...members.keys()].filter((name) => !required.has(name));
    const sep = sequence(literal(','), WS);
    const optionalParts: Array<{ node: GrammarNode; many: boolean }> = optionalMembers.map((name) => ({ node: members.get(name) as GrammarNode, many: false }));
    if (extra) optionalParts.push({ node: rule(this.newRule(`${path}-extra`, extra)), many: true });
    // llama.cpp's layout: optional members in their order, each at most once, without listing every subset.
    const restRules: GrammarNode[] = [];
    for (let index = optionalParts.length - 1; index >= 0; index--) {
      const { node, many } = optionalParts[index];
      const after = restRules[index + 1];
      const here = many ? { kind: 'repeat' as const, item: sequence(sep, node), min: 0, max: undefined } : optional(sequence(sep, node));
      restRules[index] = rule(this.newRule(`${path}-rest`, after ? sequence(here, after) : here));
    }
    const startAt = (index: number): GrammarNode => {
      const { node, many } = optionalParts[index];
      const head = many ? sequence(node, { kind: 'repeat', item: sequence(sep, node), min: 0, max: undefined }) : node;
      return restRules[index + 1] ? sequence(head, restRules[index + 1]) : head;
    };
    let body: GrammarNode;
    const requiredBody = requiredMembers.map((name, index) =>
      index === 0 ? (members.get(name) as GrammarNode) : sequence(sep, members.get(name) as GrammarNode),
    );
    if (requiredMembers.length > 0) body = sequence(...requiredBody, ...(restRules[0] ? [restRules[0]] : []));
    else if (optionalParts.length > 0) body = optional(choice(...optionalParts.map((_, index) => startAt(index))));
    else body = EMPTY;
    return sequence(literal('{'), WS, body, WS, literal('}'));
  }

  /** A node as itself when small, else as a rule of its own (so that using it twice costs a name, not a copy). */
  private named(node: GrammarNode, name: string): GrammarNode {
    return node.kind === 'rule' || node.kind === 'chars' || node.kind === 'literal' ? node : rule(this.newRule(name, node));
  }
}

function tighter(bounds: Array<Bound | undefined>, side: 'lower' | 'upper'): Bound | undefined {
  let best: Bound | undefined;
  for (const bound of bounds) {
    if (bound === undefined) continue;
    if (best === undefined) best = bound;
    else if (
      side === 'lower'
        ? bound.value > best.value || (bound.value === best.value && bound.exclusive)
        : bound.value < best.value || (bound.value === best.value && bound.exclusive)
    )
      best = bound;
  }
  return best;
}

const floorDiv = (a: bigint, b: bigint): bigint => (a >= 0n ? a / b : -((-a + b - 1n) / b));
const ceilDiv = (a: bigint, b: bigint): bigint => -floorDiv(-a, b);

/** Texts as one alternation, shared beginnings merged (a trie): llama.cpp then tracks few alternatives per character. */
export function textChoice(texts: string[]): GrammarNode {
  if (texts.length <= 4) return choice(...texts.map(literal));
  const build = (group: string[], offset: number): GrammarNode => {
    const byFirst = new Map<string, string[]>();
    let ends = false;
    for (const text of group) {
      if (text.length === offset) ends = true;
      else {
        const first = text[offset];
        byFirst.set(first, [...(byFirst.get(first) ?? []), text]);
      }
    }
    const alternatives: GrammarNode[] = ends ? [literal('')] : [];
    for (const [, members] of byFirst) {
      // Follow the characters all members share.
      let end = offset + 1;
      while (members.every((text) => text.length > end && text[end] === members[0][end])) end++;
      alternatives.push(sequence(literal(members[0].slice(offset, end)), members.length === 1 && members[0].length === end ? EMPTY : build(members, end)));
    }
    return choice(...alternatives);
  };
  return build(texts, 0);
}

/** A JSON string that is none of `names` (extra keys must not repeat a declared one). */
function keyExcept(names: string[]): GrammarNode {
  const plainName = (name: string): boolean => [...name].every((c) => c >= ' ' && c !== '"' && c !== '\\' && c !== '\x7f');
  const visit = (group: string[], offset: number): GrammarNode => {
    const byFirst = new Map<string, string[]>();
    for (const name of group) if (name.length > offset) byFirst.set(name[offset], [...(byFirst.get(name[offset]) ?? []), name]);
    const endsHere = group.some((name) => name.length === offset);
    const alternatives: GrammarNode[] = [];
    const anyChar = { kind: 'repeat' as const, item: STRING_CHAR, min: 0, max: undefined };
    // A character no name continues with, then anything.
    const others = jsonChars(
      splitOut(
        [0x20, 0x10ffff],
        [...byFirst.keys()].map((c) => c.codePointAt(0) as number),
      ),
    );
    alternatives.push(sequence(others, anyChar));
    for (const [c, members] of byFirst) alternatives.push(sequence(literal(c), visit(members, offset + 1)));
    // Stopping here is a different key unless a name ends here.
    if (!endsHere) alternatives.push(EMPTY);
    return choice(...alternatives);
  };
  const plain = names.filter(plainName);
  return sequence(QUOTE, plain.length === 0 ? { kind: 'repeat', item: STRING_CHAR, min: 0, max: undefined } : visit(plain, 0), QUOTE);
}

/** `[a, b]` without the given code points. */
function splitOut([a, b]: [number, number], points: number[]): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  let start = a;
  for (const p of [...points].sort((x, y) => x - y)) {
    if (p < start || p > b) continue;
    if (p > start) out.push([start, p - 1]);
    start = p + 1;
  }
  if (start <= b) out.push([start, b]);
  return out;
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
