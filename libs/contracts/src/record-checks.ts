import { isCount, isJsonObject, jsonKindOf } from './value-guards';

/**
 * Checks for records read back from Redis or a queue, where a cast would trust whatever an older
 * or newer version (or a hand) wrote there. A check names what is wrong with a value, by its path
 * (`messages[2].content is not a string`), or returns undefined when it is right. They compose
 * into one check per record, so a decoder refuses a value with a reason instead of guessing.
 */
export type Check = (value: unknown, path: string) => string | undefined;

/** A check for each field of T, optional ones included: a field added to T needs its check here. */
export type Shape<T> = { readonly [K in keyof T]-?: Check };

/** What is wrong with a value at `path` that is not `what`. */
const wrong = (value: unknown, path: string, what: string): string =>
  value === undefined ? `${path} is missing` : `${path} is ${jsonKindOf(value)}, not ${what}`;

const expect =
  (test: (value: unknown) => boolean, what: string): Check =>
  (value, path) =>
    test(value) ? undefined : wrong(value, path, what);

export const aString = expect((value) => typeof value === 'string', 'a string');
export const aBoolean = expect((value) => typeof value === 'boolean', 'a boolean');
export const aNumber = expect((value) => typeof value === 'number' && Number.isFinite(value), 'a number');
export const anInteger = expect(Number.isInteger, 'an integer');
export const aCount = expect(isCount, 'a non-negative integer');
/** Any object (a JSON schema, a request body): its contents are not this record's to check. */
export const anObject = expect(isJsonObject, 'an object');

/** A value a type guard accepts: `what` names it in the reason. */
export const satisfies = (guard: (value: unknown) => boolean, what: string): Check => expect(guard, what);

/** One of a fixed set of values (an enum, a literal). */
export function oneOf(...values: ReadonlyArray<string | number>): Check {
  const allowed = new Set<unknown>(values);
  const what = `one of ${values.map((one) => JSON.stringify(one)).join(', ')}`;
  return (value, path) => {
    if (allowed.has(value)) return undefined;
    return typeof value === 'string' || typeof value === 'number' ? `${path} is ${JSON.stringify(value)}, not ${what}` : wrong(value, path, what);
  };
}

export const optional =
  (check: Check): Check =>
  (value, path) =>
    value === undefined ? undefined : check(value, path);

export const nullable =
  (check: Check): Check =>
  (value, path) =>
    value === null ? undefined : check(value, path);

export function arrayOf(check: Check): Check {
  return (value, path) => {
    if (!Array.isArray(value)) return wrong(value, path, 'an array');
    for (const [index, element] of value.entries()) {
      const problem = check(element, `${path}[${index}]`);
      if (problem !== undefined) return problem;
    }
    return undefined;
  };
}

/** An object with these fields; fields it does not name are let through (a newer writer's extras). */
export function fields<T>(shape: Shape<T>): Check {
  const entries: Array<[string, Check]> = Object.entries(shape);
  return (value, path) => {
    if (!isJsonObject(value)) return wrong(value, path, 'an object');
    for (const [name, check] of entries) {
      const problem = check(value[name], `${path}.${name}`);
      if (problem !== undefined) return problem;
    }
    return undefined;
  };
}

/** An object used as a map: every value passes `check`. */
export function recordOf(check: Check): Check {
  return (value, path) => {
    if (!isJsonObject(value)) return wrong(value, path, 'an object');
    for (const [key, entry] of Object.entries(value)) {
      const problem = check(entry, `${path}.${key}`);
      if (problem !== undefined) return problem;
    }
    return undefined;
  };
}

/** A value any of `checks` accepts; `what` names them together in the reason. */
export function anyOf(what: string, ...checks: Check[]): Check {
  return (value, path) => (checks.some((check) => check(value, path) === undefined) ? undefined : wrong(value, path, what));
}

/** A tagged union: the tag field picks the variant whose check applies. */
export function byTag(tag: string, variants: Readonly<Record<string, Check>>): Check {
  const tagCheck = oneOf(...Object.keys(variants));
  return (value, path) => {
    if (!isJsonObject(value)) return wrong(value, path, 'an object');
    const tagValue = value[tag];
    return tagCheck(tagValue, `${path}.${tag}`) ?? variants[tagValue as string](value, path);
  };
}

/** A record that cannot be read: what it is, and what is wrong with it. */
export class UnreadableRecordError extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'UnreadableRecordError';
  }
}

/**
 * The value as T once `check` passes; throws UnreadableRecordError naming the problem otherwise.
 * `what` names the record in the reason (`stored completion record`).
 */
export function checked<T>(value: unknown, check: Check, what: string): T {
  const problem = check(value, what);
  if (problem !== undefined) throw new UnreadableRecordError(problem);
  return value as T;
}

/** A JSON text read back from Redis, parsed and checked; an unparsable one is unreadable too. */
export function parseChecked<T>(text: string, check: Check, what: string): T {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new UnreadableRecordError(`${what} is not JSON`);
  }
  return checked<T>(value, check, what);
}
