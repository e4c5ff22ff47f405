import { createHash } from 'node:crypto';
import type { ChatMessage, ToolDefinition } from '@app/contracts';

const digest = (text: string): string => createHash('sha256').update(text).digest('base64url').slice(0, 32);

/**
 * A request's affinity key (see CompletionJobData.affinityKey), for any front door: the client's
 * `prompt_cache_key` when it gives one; else a hash of what every turn of its conversation begins
 * with, in the order the template renders it: the tool definitions, the leading system messages
 * and the first message after them. Turn N+1 resends turns 1..N, so all its turns share the key,
 * and two conversations share one only when their first turn is the same. The model is part of
 * the map's key, not of this one.
 */
export function affinityKeyOf(promptCacheKey: string | undefined, messages: readonly ChatMessage[], tools: readonly ToolDefinition[] | undefined): string {
  if (promptCacheKey !== undefined && promptCacheKey !== '') return `key:${digest(promptCacheKey)}`;
  const firstTurn = messages.findIndex((message) => message.role !== 'system');
  const start = messages.slice(0, firstTurn < 0 ? messages.length : firstTurn + 1).map(({ role, content }) => [role, content]);
  return `prefix:${digest(JSON.stringify([tools ?? [], start]))}`;
}
