import { Injectable } from '@nestjs/common';
import type { ArgumentMetadata, PipeTransform } from '@nestjs/common';
import { isJsonObject, jsonKindOf } from '@app/contracts';
import { OpenAiError } from '../../errors/openai-error';
import { isChatRequestBody } from './chat-request-body';

/** The arrays of objects in a request, each with its path: `messages`, `tools`, every message's `tool_calls`. */
function objectArrays(body: Record<string, unknown>): Array<{ path: string; items: unknown[] }> {
  const arrays: Array<{ path: string; items: unknown[] }> = [];
  const { messages, tools } = body;
  if (Array.isArray(messages)) {
    arrays.push({ path: 'messages', items: messages });
    messages.forEach((message, index) => {
      if (isJsonObject(message) && Array.isArray(message.tool_calls)) arrays.push({ path: `messages[${index}].tool_calls`, items: message.tool_calls });
    });
  }
  if (Array.isArray(tools)) arrays.push({ path: 'tools', items: tools });
  return arrays;
}

/**
 * Each element of `messages`, `tools` and `tool_calls` must be a JSON object.
 * `@ValidateNested({ each: true })` recurses into an element that is itself an array and finds
 * nothing wrong with `[]`, so `[[]]` passed validation and failed later as a 500. Runs before
 * ValidationPipe; what is inside each object is the DTO's business.
 */
@Injectable()
export class MessageObjectsPipe implements PipeTransform {
  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    if (!isChatRequestBody(value, metadata)) return value;
    for (const { path, items } of objectArrays(value)) {
      const index = items.findIndex((item) => !isJsonObject(item));
      if (index === -1) continue;
      const param = `${path}[${index}]`;
      throw OpenAiError.invalidRequest(`Invalid type for '${param}': expected an object, but got ${jsonKindOf(items[index])} instead.`, param, 'invalid_type');
    }
    return value;
  }
}
