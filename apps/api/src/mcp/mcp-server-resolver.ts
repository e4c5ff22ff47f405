import { HTTP_HEADER_NAME, HTTP_HEADER_VALUE, MCP_SERVER_LABEL } from '@app/config';
import { OpenAiError } from '../errors/openai-error';
import type { AllowlistMatch, McpAllowlist } from './mcp-allowlist';
import type { McpRegisteredServers } from './mcp-registered-servers';
import type { McpServer } from './mcp-types';

/** The fields of a Responses `mcp` tool that say which server it is and what to send it. */
export interface McpToolServerFields {
  server_label?: unknown;
  server_url?: unknown;
  headers?: unknown;
  authorization?: unknown;
  connector_id?: unknown;
}

/** Headers a request may not set: the transport's own, and those that would change where or how the request goes. */
const RESERVED_HEADERS = new Set([
  'host',
  'connection',
  'content-length',
  'content-type',
  'accept',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'keep-alive',
  'proxy-authorization',
  'proxy-connection',
  'expect',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
]);
const MAX_HEADERS = 64;
const MAX_HEADER_BYTES = 16 * 1024;

/**
 * Turns a request's `mcp` tool into the server it may reach, or refuses it with a 400 naming the
 * field: a registered server by its label, or a URL the allowlist admits.
 */
export class McpServerResolver {
  constructor(
    private readonly allowlist: McpAllowlist,
    private readonly registered: McpRegisteredServers,
  ) {}

  resolve(tool: McpToolServerFields, param: string): McpServer {
    if (tool.connector_id !== undefined && tool.connector_id !== null) {
      throw OpenAiError.invalidRequest(
        'OpenAI connectors are not available on this service: give the MCP server by `server_url`.',
        `${param}.connector_id`,
        'unsupported_value',
      );
    }
    const label = tool.server_label;
    if (typeof label !== 'string' || !MCP_SERVER_LABEL.test(label)) {
      throw OpenAiError.invalidRequest('`server_label` must be 1-64 letters, digits, `_` or `-`.', `${param}.server_label`, 'invalid_value');
    }
    const headers = requestHeaders(tool, param);
    const registered = this.registered.get(label, headers);
    if (tool.server_url === undefined || tool.server_url === null) {
      if (registered) return registered;
      throw OpenAiError.invalidRequest(
        `No MCP server is registered on this service as \`${label}\`: give its \`server_url\`.`,
        `${param}.server_label`,
        'invalid_value',
      );
    }
    const url = serverUrl(tool.server_url, param);
    if (registered) {
      if (url.href === registered.url) return registered;
      throw OpenAiError.invalidRequest(
        `\`${label}\` is the label of an MCP server registered on this service, at another URL: give its label alone, or another label.`,
        `${param}.server_url`,
        'invalid_value',
      );
    }
    if (this.allowlist.empty) {
      throw OpenAiError.invalidRequest(
        'This service does not connect to MCP servers given by URL; use a server registered by its operator, by `server_label`.',
        `${param}.server_url`,
        'unsupported_value',
      );
    }
    if (!this.allowlist.match(url)) {
      throw OpenAiError.invalidRequest("This MCP server is not among those this service's operator allows.", `${param}.server_url`, 'invalid_value');
    }
    return { label, url: url.href, headers, registered: false };
  }

  /**
   * How `server` may be reached now, or `undefined` when it may not: a server that did not come
   * from `resolve` (or no longer would) gets no connection.
   */
  reach(server: McpServer): AllowlistMatch | undefined {
    if (server.registered) return this.registered.holds(server) ? { namesHost: true } : undefined;
    let url: URL;
    try {
      url = new URL(server.url);
    } catch {
      return undefined;
    }
    if (url.username !== '' || url.password !== '' || this.registered.get(server.label)) return undefined;
    return this.allowlist.match(url);
  }
}

function serverUrl(value: unknown, param: string): URL {
  let url: URL | undefined;
  try {
    url = typeof value === 'string' ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  if (!url) throw OpenAiError.invalidRequest('`server_url` must be an absolute http:// or https:// URL.', `${param}.server_url`, 'invalid_value');
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw OpenAiError.invalidRequest('`server_url` must be an http:// or https:// URL (streamable HTTP).', `${param}.server_url`, 'unsupported_value');
  }
  if (url.username !== '' || url.password !== '') {
    throw OpenAiError.invalidRequest(
      '`server_url` must not carry credentials: send them as `authorization` or `headers`.',
      `${param}.server_url`,
      'invalid_value',
    );
  }
  url.hash = '';
  return url;
}

/** The tool's `headers`, and its `authorization` as `Authorization: Bearer …` (which wins over a header of that name). Values are never echoed. */
function requestHeaders(tool: McpToolServerFields, param: string): Record<string, string> {
  const headers: Record<string, string> = {};
  if (tool.headers !== undefined && tool.headers !== null) {
    if (typeof tool.headers !== 'object' || Array.isArray(tool.headers)) {
      throw OpenAiError.invalidRequest('`headers` must be an object of header names to string values.', `${param}.headers`, 'invalid_value');
    }
    for (const [name, value] of Object.entries(tool.headers as Record<string, unknown>)) {
      if (!HTTP_HEADER_NAME.test(name) || typeof value !== 'string' || !HTTP_HEADER_VALUE.test(value)) {
        throw OpenAiError.invalidRequest(`\`headers.${name}\` must be a header name with a string value on one line.`, `${param}.headers`, 'invalid_value');
      }
      if (RESERVED_HEADERS.has(name.toLowerCase())) {
        throw OpenAiError.invalidRequest(`\`headers.${name}\` is set by this service and cannot be given.`, `${param}.headers`, 'invalid_value');
      }
      headers[name] = value;
    }
  }
  if (tool.authorization !== undefined && tool.authorization !== null) {
    if (typeof tool.authorization !== 'string' || tool.authorization === '' || !HTTP_HEADER_VALUE.test(tool.authorization)) {
      throw OpenAiError.invalidRequest('`authorization` must be a token on one line.', `${param}.authorization`, 'invalid_value');
    }
    for (const name of Object.keys(headers)) if (name.toLowerCase() === 'authorization') delete headers[name];
    headers.Authorization = `Bearer ${tool.authorization}`;
  }
  const size = Object.entries(headers).reduce((sum, [name, value]) => sum + name.length + value.length, 0);
  if (Object.keys(headers).length > MAX_HEADERS || size > MAX_HEADER_BYTES) {
    throw OpenAiError.invalidRequest(
      `\`headers\` may hold at most ${MAX_HEADERS} headers of ${MAX_HEADER_BYTES} bytes in all.`,
      `${param}.headers`,
      'invalid_value',
    );
  }
  return headers;
}
