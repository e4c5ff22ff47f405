import { isRecord } from '@app/contracts';
import type { McpServer, McpToolInfo } from '../../mcp/mcp-types';
import { invalid } from './item-fields';

/** An `mcp` tool as the Response object echoes it: never its `headers` or `authorization` (OpenAI drops them too). */
export interface McpToolEcho {
  type: 'mcp';
  server_label: string;
  server_url?: string;
  server_description?: string;
  allowed_tools: unknown;
  require_approval: unknown;
  headers: null;
}

/** `{tool_names, read_only}`: the tools it names, or those annotated read-only (`readOnlyHint`), or both. */
interface ToolFilter {
  toolNames?: string[];
  readOnly?: boolean;
}

/** One `mcp` tool of a request, read: its server, which of its tools are allowed, which need approval. */
export interface McpServerTool {
  /** Its place in `tools`, which a refusal names. */
  index: number;
  label: string;
  server: McpServer;
  echo: McpToolEcho;
  allowed: (tool: McpToolInfo) => boolean;
  needsApproval: (tool: McpToolInfo) => boolean;
}

/** What the model is offered of one server: its allowed tools as listed, and which of them wait for approval. */
export interface McpOffer {
  index: number;
  label: string;
  tools: McpToolInfo[];
  needsApproval: (tool: McpToolInfo) => boolean;
  echo: McpToolEcho;
}

function toolFilter(raw: unknown, param: string): ToolFilter {
  if (Array.isArray(raw)) {
    if (!raw.every((name) => typeof name === 'string')) throw invalid(`'${param}' must list tool names.`, param);
    return { toolNames: raw };
  }
  if (!isRecord(raw)) throw invalid(`'${param}' must be a list of tool names or an object with 'tool_names' or 'read_only'.`, param);
  const { tool_names, read_only } = raw;
  if (tool_names !== undefined && !(Array.isArray(tool_names) && tool_names.every((name) => typeof name === 'string')))
    throw invalid(`'${param}.tool_names' must list tool names.`, `${param}.tool_names`);
  if (read_only !== undefined && typeof read_only !== 'boolean') throw invalid(`'${param}.read_only' must be a boolean.`, `${param}.read_only`);
  return { ...(tool_names ? { toolNames: tool_names } : {}), ...(read_only === undefined ? {} : { readOnly: read_only }) };
}

function matches(filter: ToolFilter, tool: McpToolInfo): boolean {
  const readOnly = tool.annotations?.readOnlyHint === true;
  return (filter.toolNames === undefined || filter.toolNames.includes(tool.name)) && (filter.readOnly === undefined || filter.readOnly === readOnly);
}

/** `require_approval`: `always` (OpenAI's default), `never`, or `{always, never}` filters; a tool neither names follows `always` unless only `always` was given. */
function approvalRule(raw: unknown, param: string): (tool: McpToolInfo) => boolean {
  if (raw === undefined || raw === null || raw === 'always') return () => true;
  if (raw === 'never') return () => false;
  if (!isRecord(raw)) throw invalid(`'${param}' must be 'always', 'never' or an object with 'always' or 'never' filters.`, param);
  const always = raw.always === undefined || raw.always === null ? undefined : toolFilter(raw.always, `${param}.always`);
  const never = raw.never === undefined || raw.never === null ? undefined : toolFilter(raw.never, `${param}.never`);
  return (tool) => {
    if (never && matches(never, tool)) return false;
    if (always && matches(always, tool)) return true;
    return never !== undefined || always === undefined;
  };
}

/** The request's `mcp` tools, read; `resolve` (the gateway) turns each into a server it may reach, or refuses it with a 400. */
export function mcpServerTools(tools: Array<Record<string, unknown>>, resolve: (tool: Record<string, unknown>, param: string) => McpServer): McpServerTool[] {
  const found: McpServerTool[] = [];
  for (const [index, tool] of tools.entries()) {
    if (tool.type !== 'mcp') continue;
    const param = `tools[${index}]`;
    const { server_label, server_url, server_description, allowed_tools, require_approval } = tool;
    if (typeof server_label !== 'string' || server_label === '') throw invalid(`'${param}.server_label' must be a non-empty string.`, `${param}.server_label`);
    if (found.some((other) => other.label === server_label)) throw invalid(`Two MCP servers are labelled '${server_label}'.`, `${param}.server_label`);
    const filter = allowed_tools === undefined || allowed_tools === null ? undefined : toolFilter(allowed_tools, `${param}.allowed_tools`);
    const needsApproval = approvalRule(require_approval, `${param}.require_approval`);
    const server = resolve(tool, param);
    const echo: McpToolEcho = {
      type: 'mcp',
      server_label,
      ...(typeof server_url === 'string' ? { server_url } : {}),
      ...(typeof server_description === 'string' ? { server_description } : {}),
      allowed_tools: allowed_tools ?? null,
      require_approval: require_approval ?? 'always',
      headers: null,
    };
    found.push({ index, label: server_label, server, echo, allowed: (listed) => !filter || matches(filter, listed), needsApproval });
  }
  return found;
}
