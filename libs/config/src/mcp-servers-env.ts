/** An MCP server the operator registers (MCP_SERVERS): requests name it by `server_label` alone. */
export interface McpServerRegistration {
  /** What requests call it (`server_label`): 1-64 of letters, digits, `_` and `-`. */
  label: string;
  /** Its streamable HTTP endpoint, `http://` or `https://`, without credentials in it. */
  url: string;
  /** Sent on every request to it (its credentials, typically `Authorization`). */
  headers: Record<string, string>;
}

/** The server label OpenAI's `mcp` tool accepts, which the Responses door repeats in its items. */
export const MCP_SERVER_LABEL = /^[A-Za-z0-9_-]{1,64}$/;
/** A header name as HTTP defines a token. */
export const HTTP_HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** A header value: no line breaks or NUL, which would end or split the header. */
export const HTTP_HEADER_VALUE = /^[^\r\n\0]*$/;

function registration(entry: unknown): McpServerRegistration | undefined {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return undefined;
  const { label, url, headers = {}, ...rest } = entry as Record<string, unknown>;
  if (Object.keys(rest).length > 0 || typeof label !== 'string' || !MCP_SERVER_LABEL.test(label) || typeof url !== 'string') return undefined;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if ((parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || parsed.username !== '' || parsed.password !== '') return undefined;
  if (typeof headers !== 'object' || headers === null || Array.isArray(headers)) return undefined;
  const entries = Object.entries(headers as Record<string, unknown>);
  if (!entries.every(([name, value]) => HTTP_HEADER_NAME.test(name) && typeof value === 'string' && HTTP_HEADER_VALUE.test(value))) return undefined;
  return { label, url: parsed.href, headers: Object.fromEntries(entries) as Record<string, string> };
}

/**
 * MCP_SERVERS as JSON (`[{"label", "url", "headers"}]`) becomes the registrations; anything else
 * (not JSON, a bad entry, a label twice) stays the text it was, which the variable's validator
 * refuses without showing it (it holds credentials).
 */
export function parseMcpServers(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return value;
  }
  if (!Array.isArray(parsed)) return value;
  const servers = parsed.map(registration);
  if (servers.some((server) => server === undefined)) return value;
  const labels = new Set(servers.map((server) => server?.label));
  return labels.size === servers.length ? servers : value;
}
