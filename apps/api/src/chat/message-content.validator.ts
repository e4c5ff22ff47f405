import { ValidateBy, buildMessage } from 'class-validator';
import type { ValidationOptions } from 'class-validator';
import { isRecord } from '@app/contracts';

/** OpenAI's text content part; other part types (images, audio) are not served here. */
export interface TextContentPart {
  type: 'text';
  text: string;
}

export type MessageContent = string | TextContentPart[];

function isTextPart(value: unknown): value is TextContentPart {
  return isRecord(value) && value.type === 'text' && typeof value.text === 'string' && Object.keys(value).length === 2;
}

export function isMessageContent(value: unknown): value is MessageContent {
  return typeof value === 'string' || (Array.isArray(value) && value.every(isTextPart));
}

/** A message's content: a string, or an array of `{type: "text", text}` parts as newer clients send. */
export function IsMessageContent(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isMessageContent',
      validator: {
        validate: (value: unknown) => isMessageContent(value),
        defaultMessage: buildMessage(() => 'content must be a string or an array of text parts', options),
      },
    },
    options,
  );
}

/** Text parts are joined as OpenAI does for text-only models. */
export function contentText(content: MessageContent): string {
  return typeof content === 'string' ? content : content.map((part) => part.text).join('');
}
