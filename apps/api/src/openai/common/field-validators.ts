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

/** `temperature`, as every generating door takes it: optional, 0 to 2. */
export const IsTemperature = (): PropertyDecorator => applyDecorators(IsOptional(), IsNumber(FINITE), Min(0), Max(2));

/** `top_p`, as every generating door takes it: optional, 0 to 1. */
export const IsTopP = (): PropertyDecorator => applyDecorators(IsOptional(), IsNumber(FINITE), Min(0), Max(1));

/** `frequency_penalty` and `presence_penalty`, as every door takes them: optional, -2 to 2. */
export const IsPenalty = (): PropertyDecorator => applyDecorators(IsOptional(), IsNumber(FINITE), Min(-2), Max(2));

/** OpenAI's metadata: at most 16 pairs of strings, keys up to 64 characters, values up to 512. */
function isMetadata(value: unknown): boolean {
  if (!isJsonObject(value)) return false;
  const entries = Object.entries(value);
  return entries.length <= 16 && entries.every(([key, item]) => key.length <= 64 && typeof item === 'string' && item.length <= 512);
}

export const IsMetadata = shapeValidator('isMetadata', isMetadata, 'metadata must be at most 16 string pairs (keys up to 64 characters, values up to 512)');

/** OpenAI's logit_bias: token ids (as keys) to a bias from -100 to 100, at most 300 of them. */
function isLogitBias(value: unknown): boolean {
  if (!isJsonObject(value)) return false;
  const entries = Object.entries(value);
  return (
    entries.length <= 300 &&
    entries.every(([token, bias]) => /^(0|[1-9]\d{0,9})$/.test(token) && typeof bias === 'number' && Number.isFinite(bias) && bias >= -100 && bias <= 100)
  );
}

export const IsLogitBias = shapeValidator('isLogitBias', isLogitBias, 'logit_bias must map token ids to numbers from -100 to 100 (at most 300 tokens)');

/** logit_bias as the job carries it: each token id with its bias. */
export function logitBiasList(bias: Record<string, number> | undefined): Array<{ token: number; bias: number }> | undefined {
  return bias ? Object.entries(bias).map(([token, value]) => ({ token: Number(token), bias: value })) : undefined;
}
