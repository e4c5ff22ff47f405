import { ValidateBy, buildMessage } from 'class-validator';
import type { ValidationOptions } from 'class-validator';
import { isRecord } from '@app/contracts';

/** OpenAI's explicit cache breakpoint: the prompt up to the end of its part is worth keeping. */
export interface PromptCacheBreakpoint {
  mode: 'explicit';
  ttl?: '30m' | '12h' | null;
}

/** OpenAI's text content part; other part types (images, audio) are not served here. */
export interface TextContentPart {
  type: 'text';
  text: string;
  prompt_cache_breakpoint?: PromptCacheBreakpoint | null;
}

export type MessageContent = string | TextContentPart[];

const hasOnlyKeys = (value: Record<string, unknown>, keys: readonly string[]): boolean => Object.keys(value).every((key) => keys.includes(key));

/** `null` counts as absent, as it does for the request's own fields (NullFieldsPipe). */
const absent = (value: unknown): boolean => value === undefined || value === null;

function isBreakpoint(value: unknown): value is PromptCacheBreakpoint {
  return (
    isRecord(value) && value.mode === 'explicit' && (absent(value.ttl) || value.ttl === '30m' || value.ttl === '12h') && hasOnlyKeys(value, ['mode', 'ttl'])
  );
}

function isTextPart(value: unknown): value is TextContentPart {
  return (
    isRecord(value) &&
    value.type === 'text' &&
    typeof value.text === 'string' &&
    (absent(value.prompt_cache_breakpoint) || isBreakpoint(value.prompt_cache_breakpoint)) &&
    hasOnlyKeys(value, ['type', 'text', 'prompt_cache_breakpoint'])
  );
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
        defaultMessage: buildMessage(
          () =>
            "content must be a string or an array of text parts ({type: 'text', text}, optionally with prompt_cache_breakpoint {mode: 'explicit', ttl?: '30m' | '12h'})",
          options,
        ),
      },
    },
    options,
  );
}

/** Text parts are joined as OpenAI does for text-only models. */
export function contentText(content: MessageContent): string {
  return typeof content === 'string' ? content : content.map((part) => part.text).join('');
}

/** Where the text of `content` (as contentText joins it) ends for each part that carries a cache breakpoint. */
export function breakpointOffsets(content: MessageContent): number[] {
  if (typeof content === 'string') return [];
  const offsets: number[] = [];
  let offset = 0;
  for (const part of content) {
    offset += part.text.length;
    if (part.prompt_cache_breakpoint) offsets.push(offset);
  }
  return offsets;
}
