import { isJsonObject } from '@app/contracts';
import type { McpCallError, McpToolInfo } from '../../mcp/mcp-types';
import { MAX_MESSAGE_CHARS } from '../common/request-limits';
import { invalid, optionalId, requiredString } from './item-fields';
import { newItemId } from './response-ids';

/**
 * The items of a remote MCP server's tool loop (the `mcp` tool), as OpenAI gives them and a client
 * sends them back: the tools a server listed, a call the service made, a call waiting for the
 * client's approval, and that approval.
 */
export type McpItem =
  | { type: 'mcp_list_tools'; id: string; server_label: string; tools: McpToolInfo[]; error: string | null }
  | {
      type: 'mcp_call';
      id: string;
      server_label: string;
      name: string;
      arguments: string;
      output: string | null;
      error: McpCallError | null;
      status: 'in_progress' | 'completed' | 'incomplete' | 'calling' | 'failed';
      approval_request_id: string | null;
    }
  | { type: 'mcp_approval_request'; id: string; server_label: string; name: string; arguments: string }
  | { type: 'mcp_approval_response'; id: string; approval_request_id: string; approve: boolean; reason: string | null };

export const MCP_ITEM_TYPES: ReadonlyArray<McpItem['type']> = ['mcp_list_tools', 'mcp_call', 'mcp_approval_request', 'mcp_approval_response'];

const CALL_STATUSES = ['in_progress', 'completed', 'incomplete', 'calling', 'failed'] as const;

function optionalString(raw: Record<string, unknown>, field: string, at: string): string | null {
  return raw[field] === undefined || raw[field] === null ? null : requiredString(raw, field, at);
}

/** What a call and an approval request both name: the server, the tool, its arguments. */
function askedCall(raw: Record<string, unknown>, at: string): { server_label: string; name: string; arguments: string } {
  return { server_label: requiredString(raw, 'server_label', at), name: requiredString(raw, 'name', at), arguments: requiredString(raw, 'arguments', at) };
}

/** One replayed MCP item, checked as far as the model reads it, and given an id. */
export function mcpItem(raw: Record<string, unknown>, type: McpItem['type'], at: string): McpItem {
  switch (type) {
    case 'mcp_list_tools': {
      if (!Array.isArray(raw.tools)) throw invalid(`'${at}.tools' must be an array of tools.`, `${at}.tools`);
      const tools = (raw.tools as unknown[]).map((tool, index) => {
        if (!isJsonObject(tool)) throw invalid(`'${at}.tools[${index}]' must be a tool object.`, `${at}.tools[${index}]`);
        const schema = tool.input_schema;
        return {
          name: requiredString(tool, 'name', `${at}.tools[${index}]`),
          description: optionalString(tool, 'description', `${at}.tools[${index}]`),
          input_schema: isJsonObject(schema) ? schema : {},
          annotations: isJsonObject(tool.annotations) ? tool.annotations : null,
        };
      });
      const server_label = requiredString(raw, 'server_label', at);
      return { type, id: optionalId(raw, at) ?? newItemId('mcpl'), server_label, tools, error: optionalString(raw, 'error', at) };
    }
    case 'mcp_call': {
      const status = raw.status ?? 'completed';
      if (!CALL_STATUSES.includes(status as (typeof CALL_STATUSES)[number]))
        throw invalid(`'${at}.status' must be one of ${CALL_STATUSES.join(', ')}.`, `${at}.status`);
      return {
        type,
        id: optionalId(raw, at) ?? newItemId('mcp'),
        ...askedCall(raw, at),
        output: optionalString(raw, 'output', at),
        error: isJsonObject(raw.error) ? (raw.error as McpCallError) : null,
        status: status as (typeof CALL_STATUSES)[number],
        approval_request_id: optionalString(raw, 'approval_request_id', at),
      };
    }
    case 'mcp_approval_request':
      return { type, id: optionalId(raw, at) ?? newItemId('mcpr'), ...askedCall(raw, at) };
    case 'mcp_approval_response': {
      if (typeof raw.approve !== 'boolean') throw invalid(`'${at}.approve' must be a boolean.`, `${at}.approve`);
      return {
        type,
        id: optionalId(raw, at) ?? newItemId('mcpa'),
        approval_request_id: requiredString(raw, 'approval_request_id', at),
        approve: raw.approve,
        reason: optionalString(raw, 'reason', at),
      };
    }
  }
}

/**
 * What the model reads of a call's result: its output, or its error as OpenAI words it. An output
 * longer than a message may be (a server may answer up to MCP_MAX_RESULT_BYTES) is cut, and says
 * so; the item keeps it whole.
 */
export function mcpResultText(item: { output: string | null; error: McpCallError | null }): string {
  if (item.output !== null) return item.output.length <= MAX_MESSAGE_CHARS ? item.output : cutOutput(item.output);
  if (item.error === null) return '';
  return item.error.type === 'mcp_tool_execution_error'
    ? `Error: ${JSON.stringify(item.error.content)}`
    : `Error (${item.error.type} ${item.error.code}): ${item.error.message}`;
}

const CUT_NOTE = '\n[The output was cut here: it is longer than the model may read of one tool result.]';
const cutOutput = (output: string): string => `${output.slice(0, MAX_MESSAGE_CHARS - CUT_NOTE.length)}${CUT_NOTE}`;

/** What the model reads of a call the client declined. */
export const declinedText = (reason: string | null): string => `The user declined to run this tool${reason ? `: ${reason}` : '.'}`;
