import { randomInt } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** Milliseconds in fixed-width base 36 (9 digits last until the year 5188), then randomness. */
const TIME_DIGITS = 9;
const RANDOM_CHARS = 15;

/**
 * `prefix` and 24 characters, as OpenAI's ids look. They begin with the creation time, so ids
 * sort (byte-wise, as Redis compares them) in creation order: a listing cursor is an id, and
 * stays a valid position after its item is gone.
 */
export function newTimeOrderedId(prefix: string, now = Date.now()): string {
  let random = '';
  for (let i = 0; i < RANDOM_CHARS; i++) random += BASE62[randomInt(BASE62.length)];
  return `${prefix}${now.toString(36).padStart(TIME_DIGITS, '0')}${random}`;
}

/** The pattern of ids made with `prefix`. */
export const timeOrderedIdPattern = (prefix: string): RegExp => new RegExp(`^${prefix}[0-9a-z]{${TIME_DIGITS}}[0-9A-Za-z]{${RANDOM_CHARS}}$`);

/** When an id made with `prefix` was created, in Unix milliseconds. */
export const timeOfId = (id: string, prefix: string): number => parseInt(id.slice(prefix.length, prefix.length + TIME_DIGITS), 36);
