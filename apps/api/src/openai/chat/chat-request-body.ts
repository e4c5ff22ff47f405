import type { ArgumentMetadata } from '@nestjs/common';
import { isJsonObject } from '@app/contracts';
import { ChatCompletionRequestDto } from './chat-request.dto';

/** Whether a pipe is given a chat completion request's body, still as parsed JSON (before the DTO's validation). */
export function isChatRequestBody(value: unknown, metadata: ArgumentMetadata): value is Record<string, unknown> {
  return metadata.type === 'body' && metadata.metatype === ChatCompletionRequestDto && isJsonObject(value);
}
