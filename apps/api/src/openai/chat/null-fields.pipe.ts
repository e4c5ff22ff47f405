import { Injectable } from '@nestjs/common';
import type { ArgumentMetadata, PipeTransform } from '@nestjs/common';
import { isJsonObject } from '@app/contracts';
import { isChatRequestBody } from './chat-request-body';

const withoutNulls = (object: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(object).filter(([, value]) => value !== null));

/**
 * OpenAI's API reads a request field, or a message's field, sent as `null` as one not sent (the
 * Python client sends every `None` so). Dropping them before validation leaves every later check
 * one meaning of "absent": `seed: null` is a random seed, not seed 0; `stop: null` is no stop
 * strings; `max_tokens: null` does not disagree with `max_completion_tokens`. Schemas
 * (`response_format`, tool parameters) are not touched: in them `null` is a value.
 */
@Injectable()
export class NullFieldsPipe implements PipeTransform {
  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    if (!isChatRequestBody(value, metadata)) return value;
    const body = withoutNulls(value);
    if (Array.isArray(body.messages)) body.messages = body.messages.map((message: unknown) => (isJsonObject(message) ? withoutNulls(message) : message));
    return body;
  }
}
