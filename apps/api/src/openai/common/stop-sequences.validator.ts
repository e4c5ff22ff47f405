import { ValidateBy, buildMessage } from 'class-validator';
import type { ValidationOptions } from 'class-validator';

export const MAX_STOP_SEQUENCES = 4;

/** Half of a character (JSON allows `"\ud83d"` alone): the engines match text by UTF-16 unit, and would cut a character in two. */
const LONE_SURROGATE = /\p{Cs}/u;

const isStopString = (item: unknown): boolean => typeof item === 'string' && item.length > 0 && !LONE_SURROGATE.test(item);

function isStop(value: unknown): boolean {
  if (typeof value === 'string') return isStopString(value);
  return Array.isArray(value) && value.length <= MAX_STOP_SEQUENCES && value.every(isStopString);
}

/** `stop`: one non-empty string of whole characters, or up to four of them. */
export function IsStopSequences(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isStopSequences',
      validator: {
        validate: (value: unknown) => isStop(value),
        defaultMessage: buildMessage(
          () =>
            `stop must be a non-empty string or an array of at most ${MAX_STOP_SEQUENCES} non-empty strings, of whole characters (no lone UTF-16 surrogate)`,
          options,
        ),
      },
    },
    options,
  );
}

export function stopList(stop: string | string[] | undefined): string[] {
  if (stop === undefined) return [];
  return typeof stop === 'string' ? [stop] : stop;
}
