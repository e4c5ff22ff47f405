/**
 * The service's side of remote MCP servers (the Responses `mcp` tool), as the Responses door uses
 * it: a server resolved from a request's tool (or registered by the operator), its tools listed,
 * one tool called. The door never reaches the network itself.
 */

/** A server a request may reach: its label, its URL and the headers sent to it (credentials: never stored, logged or echoed). */
export interface McpServer {
  label: string;
  url: string;
  headers: Record<string, string>;
  /** Registered by the operator (MCP_SERVERS): its credentials are the operator's. */
  registered: boolean;
}

/** A tool as a server lists it (OpenAI's `mcp_list_tools` tool). */
export interface McpToolInfo {
  name: string;
  description: string | null;
  input_schema: Record<string, unknown>;
  annotations: Record<string, unknown> | null;
}

/** What a failed call gives the model and the `mcp_call` item, as OpenAI shapes it. */
export type McpCallError =
  | { type: 'mcp_protocol_error'; code: number; message: string }
  | { type: 'mcp_tool_execution_error'; content: unknown }
  | { type: 'http_error'; code: number; message: string };

/** A call's result: the tool's text output, or its error. */
export type McpCallResult = { output: string } | { error: McpCallError };

/** A server's tools could not be listed: the `mcp_list_tools` item's `error`. */
export class McpListError extends Error {}
