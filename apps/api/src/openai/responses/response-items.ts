import { isJsonObject, jsonKindOf } from '@app/contracts';
import { hostedToolItem, HOSTED_TOOL_ITEM_TYPES } from './hosted-tool-items';
import type { HostedToolItem } from './hosted-tool-items';
import { MCP_ITEM_TYPES, mcpItem } from './mcp-items';
import type { McpItem } from './mcp-items';
import { invalid, missing, optionalId, requiredString } from './item-fields';
import { MAX_MESSAGES } from '../common/request-limits';
import { OpenAiError } from '../../errors/openai-error';
import { newItemId } from './response-ids';

/** A text part of a message as the Responses API stores it: `input_text` from the client, `output_text` from the model. */
export type ItemContentPart = { type: 'input_text'; text: string } | { type: 'output_text'; text: string; annotations: unknown[]; logprobs: unknown[] };

/**
 * The items a conversation is made of, normalised: every item has an id (the client's, or one
 * given here), so stored ones can be listed and referenced (`item_reference`) later.
 */
export type ConversationItem =
  | { type: 'message'; id: string; role: 'user' | 'system' | 'developer'; content: ItemContentPart[]; status: 'completed' }
  | {
      type: 'message';
      id: string;
      role: 'assistant';
      content: ItemContentPart[];
      status: 'completed' | 'incomplete' | 'in_progress';
      /** Commentary or the final answer, as the client sent it (Codex resends it every turn); kept as given. */
      phase?: MessagePhase;
    }
  | {
      type: 'function_call';
      id: string;
      call_id: string;
      name: string;
      arguments: string;
      status: 'completed' | 'incomplete' | 'in_progress';
      /** The `namespace` tool whose member was called (Codex's MCP servers). */
      namespace?: string;
    }
  | { type: 'function_call_output'; id: string; call_id: string; output: string; status: 'completed' }
  | {
      type: 'custom_tool_call';
      id: string;
      call_id: string;
      name: string;
      /** The free-form input the model wrote (custom-tools.ts). */
      input: string;
      status: 'completed' | 'incomplete' | 'in_progress';
      namespace?: string;
    }
  | { type: 'custom_tool_call_output'; id: string; call_id: string; output: string; status: 'completed' }
  /** What `POST /v1/responses/compact` sealed (compaction/): opened only when a job is built of it. */
  | { type: 'compaction'; id: string; encrypted_content: string }
  | {
      type: 'reasoning';
      id: string;
      summary: Array<{ type: 'summary_text'; text: string }>;
      /** The thought itself (a reasoning model's own words), where the item carries it. */
      content?: Array<{ type: 'reasoning_text'; text: string }>;
      encrypted_content?: string | null;
      status?: 'completed' | 'incomplete' | 'in_progress';
    }
  | HostedToolItem
  | McpItem;

const MESSAGE_PHASES = ['commentary', 'final_answer'] as const;
export type MessagePhase = (typeof MESSAGE_PHASES)[number];

/** An assistant message's `phase`, when it has one. */
function phaseOf(raw: Record<string, unknown>, at: string): { phase?: MessagePhase } {
  const phase = raw.phase;
  if (phase === undefined || phase === null) return {};
  if (!MESSAGE_PHASES.includes(phase as MessagePhase)) throw invalid(`'${at}.phase' must be one of ${MESSAGE_PHASES.join(', ')}.`, `${at}.phase`);
  return { phase: phase as MessagePhase };
}

/** A replayed call's `namespace`, when it has one. */
function namespaceOf(raw: Record<string, unknown>, at: string): { namespace?: string } {
  const namespace = raw.namespace;
  if (namespace === undefined || namespace === null) return {};
  if (typeof namespace !== 'string' || namespace === '') throw invalid(`'${at}.namespace' must be a non-empty string.`, `${at}.namespace`);
  return { namespace };
}

/** What an `item_reference` resolves to: an item stored earlier for the same API key, or nothing. */
export type ItemLookup = (id: string) => Promise<ConversationItem | undefined>;

/** A message's content: a string, or text parts; images, files and audio cannot be read by the models served here. */
function contentParts(content: unknown, role: string, at: string): ItemContentPart[] {
  const textType = role === 'assistant' ? 'output_text' : 'input_text';
  const part = (text: string): ItemContentPart =>
    textType === 'output_text' ? { type: 'output_text', text, annotations: [], logprobs: [] } : { type: 'input_text', text };
  if (typeof content === 'string') return [part(content)];
  if (!Array.isArray(content)) throw missing(`${at}.content`);
  return content.map((entry, index) => {
    const param = `${at}.content[${index}]`;
    if (!isJsonObject(entry))
      throw OpenAiError.invalidRequest(`Invalid type for '${param}': expected an object, but got ${jsonKindOf(entry)} instead.`, param, 'invalid_type');
    switch (entry.type) {
      case 'input_text':
      case 'output_text':
      case 'text':
      case 'refusal':
        return part(entry.type === 'refusal' ? requiredString(entry, 'refusal', param) : requiredString(entry, 'text', param));
      default:
        throw OpenAiError.invalidRequest(
          `Content of type '${String(entry.type)}' cannot be read by the models served here; only text ('input_text') can.`,
          `${param}.type`,
          'unsupported_value',
        );
    }
  });
}

/**
 * A reasoning item's `summary` (`summary_text` parts) or `content` (`reasoning_text` parts; Codex
 * may send them as `text`), as Codex and the Agents SDK send them back.
 */
function reasoningTexts<T extends 'summary_text' | 'reasoning_text'>(parts: unknown, type: T, at: string): Array<{ type: T; text: string }> {
  if (parts === undefined || parts === null) return [];
  if (!Array.isArray(parts))
    throw OpenAiError.invalidRequest(`Invalid type for '${at}': expected an array, but got ${jsonKindOf(parts)} instead.`, at, 'invalid_type');
  return parts.map((part, index) => {
    const param = `${at}[${index}]`;
    if (!isJsonObject(part))
      throw OpenAiError.invalidRequest(`Invalid type for '${param}': expected an object, but got ${jsonKindOf(part)} instead.`, param, 'invalid_type');
    if (part.type !== type && !(type === 'reasoning_text' && part.type === 'text')) throw invalid(`'${param}.type' must be '${type}'.`, `${param}.type`);
    return { type, text: requiredString(part, 'text', param) };
  });
}

/** A tool output's text: a string, or a list of output parts, whose text is what the model reads. */
function outputText(raw: Record<string, unknown>, at: string): string {
  if (!Array.isArray(raw.output)) return requiredString(raw, 'output', at);
  return contentParts(raw.output, 'user', `${at}.output`)
    .map((part) => part.text)
    .join('');
}

/** One input item, checked and given an id; an `item_reference` is looked up among the key's stored items. */
async function normaliseItem(raw: Record<string, unknown>, at: string, lookup: ItemLookup): Promise<ConversationItem> {
  const type = raw.type ?? (raw.role !== undefined ? 'message' : undefined);
  switch (type) {
    case 'message': {
      const role = raw.role;
      if (role !== 'user' && role !== 'system' && role !== 'developer' && role !== 'assistant') {
        throw invalid(`'${at}.role' must be one of user, assistant, system, developer.`, `${at}.role`);
      }
      const content = contentParts(raw.content, role, at);
      const id = optionalId(raw, at) ?? newItemId('msg');
      return role === 'assistant'
        ? { type: 'message', id, role, content, status: 'completed', ...phaseOf(raw, at) }
        : { type: 'message', id, role, content, status: 'completed' };
    }
    case 'function_call':
      return {
        type: 'function_call',
        id: optionalId(raw, at) ?? newItemId('fc'),
        call_id: requiredString(raw, 'call_id', at),
        name: requiredString(raw, 'name', at),
        arguments: requiredString(raw, 'arguments', at),
        status: 'completed',
        ...namespaceOf(raw, at),
      };
    case 'custom_tool_call':
      return {
        type: 'custom_tool_call',
        id: optionalId(raw, at) ?? newItemId('ctc'),
        call_id: requiredString(raw, 'call_id', at),
        name: requiredString(raw, 'name', at),
        input: requiredString(raw, 'input', at),
        status: 'completed',
        ...namespaceOf(raw, at),
      };
    case 'function_call_output':
    case 'custom_tool_call_output':
      return {
        type: type as 'function_call_output' | 'custom_tool_call_output',
        id: optionalId(raw, at) ?? newItemId(type === 'function_call_output' ? 'fco' : 'ctco'),
        call_id: requiredString(raw, 'call_id', at),
        output: outputText(raw, at),
        status: 'completed',
      };
    case 'reasoning': {
      const summary = reasoningTexts(raw.summary, 'summary_text', `${at}.summary`);
      const content = raw.content === undefined || raw.content === null ? undefined : reasoningTexts(raw.content, 'reasoning_text', `${at}.content`);
      return {
        type: 'reasoning',
        id: optionalId(raw, at) ?? newItemId('rs'),
        summary,
        ...(content ? { content } : {}),
        encrypted_content: typeof raw.encrypted_content === 'string' ? raw.encrypted_content : null,
      };
    }
    case 'compaction':
      return { type: 'compaction', id: optionalId(raw, at) ?? newItemId('cmp'), encrypted_content: requiredString(raw, 'encrypted_content', at) };
    case 'item_reference': {
      const id = requiredString(raw, 'id', at);
      const item = await lookup(id);
      if (!item) throw OpenAiError.notFound(`Item with id '${id}' not found.`, `${at}.id`);
      return item;
    }
    default:
      if (HOSTED_TOOL_ITEM_TYPES.includes(type as HostedToolItem['type'])) return hostedToolItem(raw, type as HostedToolItem['type'], at);
      if (MCP_ITEM_TYPES.includes(type as McpItem['type'])) return mcpItem(raw, type as McpItem['type'], at);
      throw invalid(
        `Input items of type ${JSON.stringify(type)} are not supported here; use message, function_call, function_call_output, custom_tool_call, custom_tool_call_output, reasoning, compaction, item_reference, ${MCP_ITEM_TYPES.join(', ')} or a replayed ${HOSTED_TOOL_ITEM_TYPES.join(', ')}.`,
        `${at}.type`,
      );
  }
}

/**
 * A create's `input` and whether it ends with a `compaction_trigger` (OpenAI's "compacts the
 * current context; must be the final input item"), which is not an item of the conversation: the
 * response is then the compaction of what comes before it. Anywhere else it is a 400 naming it.
 */
export function compactionTriggered(input: string | Array<Record<string, unknown>> | undefined): {
  input: string | Array<Record<string, unknown>> | undefined;
  triggered: boolean;
} {
  if (!Array.isArray(input)) return { input, triggered: false };
  const at = input.findIndex((item) => isJsonObject(item) && item.type === 'compaction_trigger');
  if (at === -1) return { input, triggered: false };
  if (at !== input.length - 1) throw invalid(`A compaction_trigger must be the final input item.`, `input[${at}].type`);
  return { input: input.slice(0, -1), triggered: true };
}

/**
 * The request's `input` as conversation items, in order (a string is one user message). `field`
 * names them in errors: `input`, or `items` (the Conversations API's).
 */
export async function inputItems(input: string | Array<Record<string, unknown>> | undefined, lookup: ItemLookup, field = 'input'): Promise<ConversationItem[]> {
  if (input === undefined) return [];
  if (typeof input === 'string')
    return [{ type: 'message', id: newItemId('msg'), role: 'user', content: [{ type: 'input_text', text: input }], status: 'completed' }];
  if (input.length > MAX_MESSAGES) throw OpenAiError.tooLarge(`Too many items in '${field}': at most ${MAX_MESSAGES}.`, field);
  const items: ConversationItem[] = [];
  for (const [index, raw] of input.entries()) items.push(await normaliseItem(raw, `${field}[${index}]`, lookup));
  return items;
}

/** The text of a message item's parts, joined as OpenAI does for text-only models. */
export const itemText = (content: ItemContentPart[]): string => content.map((part) => part.text).join('');
