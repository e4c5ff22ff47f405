import { ValidateBy, buildMessage } from 'class-validator';
import type { ValidationOptions } from 'class-validator';

export const MAX_STOP_SEQUENCES = 4;

function isStop(value: unknown): boolean {
  if (typeof value === 'string') return value.length > 0;
  return (
    Array.isArray(value) &&
    value.length <= MAX_STOP_SEQUENCES &&
    value.every((item) => typeof item === 'string' && item.length > 0)
  );
}

/** `stop`: one non-empty string, or up to four of them. */
export function IsStopSequences(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isStopSequences',
      validator: {
        validate: (value: unknown) => isStop(value),
        defaultMessage: buildMessage(
          () => `stop must be a non-empty string or an array of at most ${MAX_STOP_SEQUENCES} non-empty strings`,
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
