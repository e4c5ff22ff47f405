import { isJsonObject } from '@app/contracts';
import type { JsonObject, JsonValue } from '@app/contracts';
import { jsonTypeOf } from './schema-keywords';
import type { TypeName } from './schema-keywords';

/**
 * Whether no value can match two of a `oneOf`'s branches. A grammar writes one branch or another
 * but cannot stop a value of one from matching another too, so it enforces `oneOf`'s "exactly one"
 * only where the branches exclude each other: different types, different `const` / `enum` values,
 * or objects told apart by a property both require (a discriminated union, as zod writes it).
 * Anything it cannot show apart counts as overlapping: the answer errs towards refusing.
 */
export function branchesExclusive(branches: readonly JsonValue[], resolve: (schema: JsonValue) => JsonValue): boolean {
  const budget = { steps: MAX_STEPS };
  for (let i = 0; i < branches.length; i++) {
    for (let j = i + 1; j < branches.length; j++) if (!exclusive(branches[i], branches[j], resolve, 0, budget)) return false;
  }
  return true;
}

/** How deep a discriminating property is looked for, and how much work the look may take. */
const MAX_DEPTH = 8;
const MAX_STEPS = 100_000;

function exclusive(a: JsonValue, b: JsonValue, resolve: (schema: JsonValue) => JsonValue, depth: number, budget: { steps: number }): boolean {
  if (--budget.steps < 0 || depth > MAX_DEPTH) return false;
  a = resolve(a);
  b = resolve(b);
  if (a === false || b === false) return true;
  if (!isJsonObject(a) || !isJsonObject(b)) return false;
  const valuesA = valuesOf(a);
  const valuesB = valuesOf(b);
  if (valuesA && valuesB) return !valuesA.some((x) => valuesB.some((y) => JSON.stringify(x) === JSON.stringify(y)));
  if (valuesA) return valuesA.every((value) => !admits(typesOf(b), jsonTypeOf(value)));
  if (valuesB) return valuesB.every((value) => !admits(typesOf(a), jsonTypeOf(value)));
  const typesA = typesOf(a);
  const typesB = typesOf(b);
  if (typesA && typesB && ![...typesA].some((type) => admits(typesB, type))) return true;
  if (onlyObjects(typesA) && onlyObjects(typesB)) {
    const propertiesA = isJsonObject(a.properties) ? a.properties : {};
    const propertiesB = isJsonObject(b.properties) ? b.properties : {};
    for (const name of requiredOf(a).filter((name) => requiredOf(b).includes(name))) {
      const [left, right] = [propertiesA[name], propertiesB[name]];
      if (left !== undefined && right !== undefined && exclusive(left, right, resolve, depth + 1, budget)) return true;
    }
  }
  return false;
}

/** The only values a schema allows when it lists them (`const`, else `enum`). */
function valuesOf(schema: JsonObject): JsonValue[] | undefined {
  if (schema.const !== undefined) return [schema.const];
  return Array.isArray(schema.enum) ? schema.enum : undefined;
}

/** The types a schema allows by its own `type`; undefined: any. */
function typesOf(schema: JsonObject): Set<TypeName> | undefined {
  if (schema.type !== undefined) {
    const types = new Set((Array.isArray(schema.type) ? schema.type : [schema.type]) as TypeName[]);
    if (schema.nullable === true) types.add('null');
    return types;
  }
  return undefined;
}

function admits(types: Set<TypeName> | undefined, type: TypeName): boolean {
  return types === undefined || types.has(type) || (type === 'integer' && types.has('number')) || (type === 'number' && types.has('integer'));
}

const onlyObjects = (types: Set<TypeName> | undefined): boolean => types !== undefined && types.size === 1 && types.has('object');

const requiredOf = (schema: JsonObject): string[] =>
  Array.isArray(schema.required) ? schema.required.filter((name): name is string => typeof name === 'string') : [];
