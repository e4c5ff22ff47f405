import { isJsonObject } from '@app/contracts';
import type { ToolCall } from '@app/contracts';
import { invalid, missing, optionalId, requiredString } from './item-fields';
import { newItemId } from './response-ids';

type ItemStatus = 'completed' | 'incomplete' | 'in_progress';

/**
 * Calls of tools that are never offered to the model here, and their outputs, as a conversation
 * replays them: Codex's `local_shell` (run where the client is) and OpenAI's hosted `tool_search`.
 * Accepted, stored and listed as given, and shown to the model as the calls and outputs they were
 * (a call of a tool named after its kind, its action or arguments as JSON), so a conversation begun
 * elsewhere goes on here.
 */
export type HostedToolItem =
  | { type: 'local_shell_call'; id: string; call_id: string; action: Record<string, unknown>; status: ItemStatus }
  | { type: 'local_shell_call_output'; id: string; call_id: string; output: string; status: ItemStatus }
  | { type: 'tool_search_call'; id: string; call_id: string; arguments: unknown; execution?: string; status: ItemStatus }
  | { type: 'tool_search_output'; id: string; call_id: string; tools: unknown[]; execution?: string; status: ItemStatus };

export const HOSTED_TOOL_ITEM_TYPES: ReadonlyArray<HostedToolItem['type']> = [
  'local_shell_call',
  'local_shell_call_output',
  'tool_search_call',
  'tool_search_output',
];

const STATUSES: readonly ItemStatus[] = ['completed', 'incomplete', 'in_progress'];

function statusOf(raw: Record<string, unknown>, at: string): ItemStatus {
  const status = raw.status ?? 'completed';
  if (!STATUSES.includes(status as ItemStatus)) throw invalid(`'${at}.status' must be one of ${STATUSES.join(', ')}.`, `${at}.status`);
  return status as ItemStatus;
}

/**
 * The call an item belongs to. A tool search's own `call_id` may be null, and OpenAI's schema
 * describes a shell output's `id` as the call's id too: the item's id then answers for it.
 */
function callIdOr(raw: Record<string, unknown>, id: string, at: string): string {
  return raw.call_id === undefined || raw.call_id === null ? id : requiredString(raw, 'call_id', at);
}

function execution(raw: Record<string, unknown>): { execution?: string } {
  return typeof raw.execution === 'string' ? { execution: raw.execution } : {};
}

/** One replayed hosted-tool item, checked as far as the model reads it, and given an id. */
export function hostedToolItem(raw: Record<string, unknown>, type: HostedToolItem['type'], at: string): HostedToolItem {
  const status = statusOf(raw, at);
  switch (type) {
    case 'local_shell_call': {
      if (!isJsonObject(raw.action)) throw missing(`${at}.action`);
      return { type, id: optionalId(raw, at) ?? newItemId('lsh'), call_id: requiredString(raw, 'call_id', at), action: raw.action, status };
    }
    case 'local_shell_call_output': {
      const id = optionalId(raw, at) ?? newItemId('lsho');
      return { type, id, call_id: callIdOr(raw, id, at), output: requiredString(raw, 'output', at), status };
    }
    case 'tool_search_call': {
      const id = optionalId(raw, at) ?? newItemId('tsc');
      return { type, id, call_id: callIdOr(raw, id, at), arguments: raw.arguments ?? {}, ...execution(raw), status };
    }
    case 'tool_search_output': {
      const id = optionalId(raw, at) ?? newItemId('tso');
      if (raw.tools !== undefined && !Array.isArray(raw.tools)) throw invalid(`'${at}.tools' must be an array of tools.`, `${at}.tools`);
      return { type, id, call_id: callIdOr(raw, id, at), tools: (raw.tools as unknown[] | undefined) ?? [], ...execution(raw), status };
    }
  }
}

/** What the model reads of a hosted-tool item: a call it made, or the output that answers one. */
export function hostedToolTurn(item: HostedToolItem): { call: ToolCall } | { output: { callId: string; text: string } } {
  switch (item.type) {
    case 'local_shell_call':
      return { call: { id: item.call_id, name: 'local_shell', arguments: JSON.stringify(item.action) } };
    case 'tool_search_call':
      return { call: { id: item.call_id, name: 'tool_search', arguments: JSON.stringify(item.arguments) } };
    case 'local_shell_call_output':
      return { output: { callId: item.call_id, text: item.output } };
    case 'tool_search_output':
      return { output: { callId: item.call_id, text: JSON.stringify(item.tools) } };
  }
}
