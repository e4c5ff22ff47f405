import { isJsonObject } from '@app/contracts';
import type { JsonObject, JsonValue } from '@app/contracts';
import { arrayGrammar, objectGrammar } from './container-grammar';
import { branchesExclusive } from './exclusive-branches';
import { EMPTY, choice, literal, optional, rule, sequence } from './grammar-ast';
import type { GrammarNode, Rules } from './grammar-ast';
import type { GrammarBuild, SchemaProblem } from './grammar-build';
import { QUOTE, STRING_CHAR, WS, textChoice } from './json-text';
import { anyNumber } from './number-range';
import { numberGrammar } from './number-grammar';
import { stringGrammar } from './string-grammar';
import { ANNOTATIONS, KEYWORDS_OF, TYPES, UNENFORCED, describe, jsonTypeOf } from './schema-keywords';
import type { TypeName } from './schema-keywords';
import { SCHEMA_LIMITS } from './schema-limits';
import type { SchemaLimit } from './schema-limits';

/** Thrown by the builder to refuse the schema; schemaGrammar answers with its problem. */
export class Refusal extends Error {
  constructor(readonly problem: SchemaProblem) {
    super(problem.message);
  }
}

/** Counts up to this are written as llama.cpp's `{m,n}`; larger ones in chunks (see repeat). */
const DIRECT_COUNT = 256;
const CHUNK = 64;

/** Builds the grammar of one schema, refusing it (Refusal) as soon as it must. */
export class SchemaGrammarBuilder implements GrammarBuild {
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
  unsupported(keyword: string, path: string, message: string): void {
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

  setRule(name: string, node: GrammarNode): void {
    this.usedNames.add(name);
    this.rules.set(name, node);
  }

  countProperties(count: number, path: string): void {
    if ((this.properties += count) > SCHEMA_LIMITS.properties) this.overLimit('properties', path, 'The properties of the schema');
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

  anyValue(): GrammarNode {
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
        return stringGrammar(this, schema, path);
      case 'number':
      case 'integer':
        return numberGrammar(this, type, schema, path);
      case 'array':
        return arrayGrammar(this, schema, path, depth);
      case 'object':
        return objectGrammar(this, schema, path, depth);
    }
  }

  length(schema: JsonObject, keyword: string, path: string): number | undefined {
    const value = schema[keyword];
    if (value === undefined) return undefined;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0)
      this.fail('invalid', keyword, `${path}.${keyword}`, `'${keyword}' at ${path} must be a non-negative integer.`);
    this.countCount(value, `${path}.${keyword}`);
    return value;
  }

  /** The grammar of any JSON string, one rule for the whole schema. */
  anyString(): GrammarNode {
    if (!this.rules.has('any-string')) {
      this.rules.set('any-string', sequence(QUOTE, { kind: 'repeat', item: STRING_CHAR, min: 0, max: undefined }, QUOTE));
    }
    return rule('any-string');
  }

  /** A keyword left to the model whatever `strict` says (an unknown `format`, an annotation there). */
  note(keyword: string, path: string, message: string): void {
    this.ignored.push({ kind: 'unsupported', keyword, path, message });
  }

  /** A node as itself when small, else as a rule of its own (so that using it twice costs a name, not a copy). */
  named(node: GrammarNode, name: string): GrammarNode {
    return node.kind === 'rule' || node.kind === 'chars' || node.kind === 'literal' ? node : rule(this.newRule(name, node));
  }
}
