import { createHash } from 'node:crypto';
import type { ChatMessage, PromptInput, ToolDefinition } from '@app/contracts';

const digest = (text: string): string => createHash('sha256').update(text).digest('base64url').slice(0, 32);

/**
 * The affinity key (see CompletionJobData.affinityKey) of a client's `prompt_cache_key`; undefined
 * for none or an empty one. Cheap: a front door sets it on every job that gives one.
 */
export function clientAffinityKey(promptCacheKey: string | null | undefined): string | undefined {
  return promptCacheKey === undefined || promptCacheKey === null || promptCacheKey === '' ? undefined : `key:${digest(promptCacheKey)}`;
}

/**
 * The affinity key of a job the client gave no key: a hash of what every turn of its conversation
 * begins with, in the order the template renders it: the tool definitions, the leading system
 * messages and the first message after them. Turn N+1 resends turns 1..N, so all its turns share
 * the key, and two conversations share one only when their first turn is the same. It costs
 * about 0.3 ms for an agent's prompt (tens of thousands of characters of tools and instructions),
 * so only placement computes it, and only when affinity is on. The model is part of the map's
 * key, not of this one.
 */
export function prefixAffinityKey(messages: readonly ChatMessage[], tools: readonly ToolDefinition[] | undefined): string {
  const firstTurn = messages.findIndex((message) => message.role !== 'system');
  const start = messages.slice(0, firstTurn < 0 ? messages.length : firstTurn + 1).map(({ role, content }) => [role, content]);
  return `prefix:${digest(JSON.stringify([tools ?? [], start]))}`;
}

/** Characters (or token ids) of a plain prompt its key reads: prompts that begin alike go where that start is cached. */
const PLAIN_PROMPT_START = 1024;

/** The affinity key of a plain prompt (the legacy completions door) the client gave no key: a hash of its start. */
export function plainPromptAffinityKey(prompt: PromptInput): string {
  return `prompt:${digest(JSON.stringify(prompt.slice(0, PLAIN_PROMPT_START)))}`;
}
