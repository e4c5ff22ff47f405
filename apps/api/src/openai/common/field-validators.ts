import { applyDecorators } from '@nestjs/common';
import { isJsonObject } from '@app/contracts';
import { IsNumber, IsOptional, Max, Min, ValidateBy, buildMessage } from 'class-validator';
import type { ValidationOptions } from 'class-validator';

/** Numbers as OpenAI takes them: no NaN, no infinities. */
export const FINITE = { allowNaN: false, allowInfinity: false };

/** A property decorator that accepts what `validate` accepts, explaining any other value with `message`. */
export function shapeValidator(name: string, validate: (value: unknown) => boolean, message: string) {
  return (options?: ValidationOptions): PropertyDecorator =>
    ValidateBy({ name, validator: { validate, defaultMessage: buildMessage(() => message, options) } }, options);
}

/** `frequency_penalty` and `presence_penalty`, as every door takes them: optional, -2 to 2. */
export const IsPenalty = (): PropertyDecorator => applyDecorators(IsOptional(), IsNumber(FINITE), Min(-2), Max(2));

/** OpenAI's metadata: at most 16 pairs of strings, keys up to 64 characters, values up to 512. */
function isMetadata(value: unknown): boolean {
  if (!isJsonObject(value)) return false;
  const entries = Object.entries(value);
  return entries.length <= 16 && entries.every(([key, item]) => key.length <= 64 && typeof item === 'string' && item.length <= 512);
}

export const IsMetadata = shapeValidator('isMetadata', isMetadata, 'metadata must be at most 16 string pairs (keys up to 64 characters, values up to 512)');
