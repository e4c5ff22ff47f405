import { randomBytes } from 'node:crypto';

/** An id for a call the model makes, in OpenAI's form (`call_…`), when nothing gave it one. */
export const newToolCallId = (): string => `call_${randomBytes(12).toString('base64url')}`;

/** A call the model made, as the conversation carries it back (OpenAI's assistant `tool_calls`). */
export interface ToolCall {
  id: string;
  name: string;
  /** The arguments as the model wrote them: a JSON text. */
  arguments: string;
}

/**
 * Messages as the engine sees them: OpenAI's `developer` is mapped onto `system`, content parts
 * are joined to text, and the API has checked that every tool message answers an earlier call.
 */
export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | {
      role: 'assistant';
      content: string;
      toolCalls?: ToolCall[];
      /** What it thought first (`reasoning_content`), for templates that render it. */ reasoning?: string;
    }
  | { role: 'tool'; content: string; toolCallId: string };

export type ChatRole = ChatMessage['role'];
