/** Checks for values read off the wire (requests, events, announcements): one definition each, used by every decoder. */

/** A non-negative integer: a count, an index, a sequence number. */
export const isCount = (value: unknown): value is number => Number.isInteger(value) && (value as number) >= 0;

export const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;

/** A parsed JSON value that is an object: not null, not an array. */
export const isJsonObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A parsed JSON value's kind as an error message names it: `null`, `an array`, `an object`, `a string`… */
export function jsonKindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
