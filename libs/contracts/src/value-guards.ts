/** Checks for values read off the wire (events, announcements): one definition each, used by every decoder. */

/** A non-negative integer: a count, an index, a sequence number. */
export const isCount = (value: unknown): value is number => Number.isInteger(value) && (value as number) >= 0;

export const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;
