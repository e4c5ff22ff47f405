import type { ServiceTier } from './service-tiers';

/** A text part of a stored message, as the client sent it. */
export interface StoredTextPart {
  type: 'text';
  text: string;
}

/**
 * One request message of a stored completion, as the client sent it (validated then): the fields
 * OpenAI's `ChatCompletionStoreMessage` gives back. The record keeps whatever else the message had.
 */
export interface StoredChatMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content?: string | StoredTextPart[] | null;
  name?: string;
  tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

/**
 * What a `store: true` chat completion request leaves in Redis beside its answer: who asked and
 * what they asked, enough to rebuild OpenAI's objects. The chat door writes it; the stored
 * completions routes read it back (checked, not cast).
 */
export interface StoredCompletionRecord {
  id: string;
  /** The API key that created it (its id): nobody else sees it. */
  owner: string;
  model: string;
  /** Unix milliseconds when the request was accepted. */
  createdMs: number;
  metadata: Record<string, string>;
  messages: StoredChatMessage[];
  choices: number;
  logprobs: boolean;
  includeUsage: boolean;
  serviceTier?: ServiceTier;
}
