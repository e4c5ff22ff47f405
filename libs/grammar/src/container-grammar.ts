import { isJsonObject } from '@app/contracts';
import type { JsonObject } from '@app/contracts';
import { EMPTY, choice, literal, optional, rule, sequence } from './grammar-ast';
import type { GrammarNode } from './grammar-ast';
import type { GrammarBuild } from './grammar-build';
import { WS, keyExcept } from './json-text';

/** The grammar of an `array` schema: tuple positions (`prefixItems`), further items, counts. */
export function arrayGrammar(build: GrammarBuild, schema: JsonObject, path: string, depth: number): GrammarNode {
  const min = build.length(schema, 'minItems', path) ?? 0;
  const max = build.length(schema, 'maxItems', path);
  if (max !== undefined && max < min)
    build.fail('invalid', 'maxItems', `${path}.maxItems`, `'maxItems' at ${path} is below 'minItems': no array satisfies both.`);
  const tuple = Array.isArray(schema.prefixItems) ? schema.prefixItems : Array.isArray(schema.items) ? schema.items : [];
  const rest = Array.isArray(schema.items) ? schema.additionalItems : schema.items;
  const sep = sequence(literal(','), WS);
  const restItem =
    rest === false ? undefined : rest === undefined ? (tuple.length > 0 ? undefined : build.anyValue()) : build.visit(rest, `${path}.items`, depth + 1);
  const positions = tuple.map((item, index) => build.visit(item, `${path}.prefixItems[${index}]`, depth + 1));
  if (positions.length === 0) {
    if (restItem === undefined) {
      if (min > 0) build.fail('invalid', 'minItems', path, `The array at ${path} needs ${min} items and allows none.`);
      return sequence(literal('['), WS, literal(']'));
    }
    return sequence(literal('['), WS, build.repeat(restItem, min, max, `${path}-item`, sep), WS, literal(']'));
  }
  // Tuple positions in order, those past minItems optional, then further items.
  const limit = max === undefined ? positions.length : Math.min(max, positions.length);
  if (min > positions.length && restItem === undefined)
    build.fail('invalid', 'minItems', path, `The array at ${path} needs ${min} items and allows ${positions.length}.`);
  let tail: GrammarNode = EMPTY;
  if (restItem !== undefined && (max === undefined || max > positions.length)) {
    tail = build.repeat(sequence(sep, restItem), Math.max(0, min - positions.length), max === undefined ? undefined : max - positions.length, `${path}-more`);
  }
  for (let index = limit - 1; index >= 1; index--) {
    const part = sequence(sep, positions[index], tail);
    tail = index < min ? part : optional(part);
  }
  const first = sequence(positions[0], tail);
  return sequence(literal('['), WS, min === 0 ? optional(first) : first, WS, literal(']'));
}

/** The grammar of an `object` schema: its members in llama.cpp's layout, records, `propertyNames`. */
export function objectGrammar(build: GrammarBuild, schema: JsonObject, path: string, depth: number): GrammarNode {
  const declared = schema.properties === undefined ? {} : schema.properties;
  if (!isJsonObject(declared)) build.fail('invalid', 'properties', `${path}.properties`, `'properties' at ${path} must be an object.`);
  const names = Object.keys(declared);
  build.countProperties(names.length, `${path}.properties`);
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((name): name is string => typeof name === 'string') : []);
  for (const name of required) {
    if (!(name in declared) && schema.additionalProperties === false)
      build.fail('invalid', 'required', `${path}.required`, `'${name}' is required at ${path} but no property of that name is allowed.`);
  }
  const member = (name: string, value: GrammarNode): GrammarNode => sequence(literal(`${JSON.stringify(name)}:`), WS, value);
  const members = new Map<string, GrammarNode>();
  for (const name of names)
    members.set(name, member(name, build.named(build.visit(declared[name], `${path}.properties.${name}`, depth + 1), `${path}-${name}`)));
  // Required names without a schema of their own take the additional properties' (or any value).
  const additional = schema.additionalProperties;
  const undeclared = [...required].filter((name) => !(name in declared));
  for (const name of undeclared)
    members.set(name, member(name, isJsonObject(additional) ? build.visit(additional, `${path}.additionalProperties`, depth + 1) : build.anyValue()));

  // Extra keys: where a schema for them is given (a record), or the object declares no property.
  let extra: GrammarNode | undefined;
  const keySchema = schema.propertyNames;
  const freeForm = (additional === true || additional === undefined) && members.size === 0;
  if (additional !== false && (isJsonObject(additional) || keySchema !== undefined || freeForm)) {
    const value = isJsonObject(additional)
      ? build.named(build.visit(additional, `${path}.additionalProperties`, depth + 1), `${path}-value`)
      : build.anyValue();
    const key =
      keySchema !== undefined
        ? build.visit(
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
  if (extra) optionalParts.push({ node: rule(build.newRule(`${path}-extra`, extra)), many: true });
  // llama.cpp's layout: optional members in their order, each at most once, without listing every subset.
  const restRules: GrammarNode[] = [];
  for (let index = optionalParts.length - 1; index >= 0; index--) {
    const { node, many } = optionalParts[index];
    const after = restRules[index + 1];
    const here = many ? { kind: 'repeat' as const, item: sequence(sep, node), min: 0, max: undefined } : optional(sequence(sep, node));
    restRules[index] = rule(build.newRule(`${path}-rest`, after ? sequence(here, after) : here));
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
