import { Transform } from 'class-transformer';

/** `"a, b,,c"` becomes `["a", "b", "c"]`; used for list-valued variables such as API_KEYS. */
export const CommaList = (): PropertyDecorator =>
  Transform(({ value }: { value: unknown }) =>
    typeof value === 'string'
      ? value
          .split(',')
          .map((item) => item.trim())
          .filter((item) => item.length > 0)
      : value,
  );

/** Integers from the environment; anything that is not a whole number stays a string and fails validation. */
export const EnvInteger = (): PropertyDecorator =>
  Transform(({ value }: { value: unknown }) => (typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value));

/** `true` / `false` become booleans; any other text stays a string and fails validation. */
export const EnvBoolean = (): PropertyDecorator => Transform(({ value }: { value: unknown }) => (value === 'true' ? true : value === 'false' ? false : value));
