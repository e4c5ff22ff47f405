import { ProtocolError, SdkError, SdkErrorCode, SdkHttpError } from '@modelcontextprotocol/client';
import { McpEgressError } from './mcp-egress';
import type { EgressFailure } from './mcp-egress';
import type { McpCallError } from './mcp-types';

/** How an exchange with a server failed: what the metrics count it as, and the error OpenAI's items carry. */
export interface McpFailure {
  outcome: 'protocol_error' | EgressFailure['outcome'];
  error: Extract<McpCallError, { type: 'mcp_protocol_error' | 'http_error' }>;
}

/** Server text in a message is cut to this: it is the server's, of any size. */
const MAX_QUOTED = 300;

const quoted = (text: string): string => (text.length > MAX_QUOTED ? `${text.slice(0, MAX_QUOTED)}…` : text);

const httpError = (outcome: McpFailure['outcome'], code: number, message: string): McpFailure => ({ outcome, error: { type: 'http_error', code, message } });

function egressFailureIn(error: unknown): EgressFailure | undefined {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 8; cause = cause.cause, depth++) {
    if (cause instanceof McpEgressError) return cause.failure;
  }
  return undefined;
}

/** The network error's code (`ECONNREFUSED`, `ENOTFOUND`…) undici's `fetch failed` carries as its cause. */
function networkCode(error: unknown): string | undefined {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 8; cause = cause.cause, depth++) {
    const code = (cause as NodeJS.ErrnoException).code;
    if (typeof code === 'string' && /^E[A-Z_]+$/.test(code)) return code;
  }
  return undefined;
}

/**
 * What `error` (thrown by the MCP client during an exchange whose guard may have cut it short
 * first) was: the guard's own reason wins; then a JSON-RPC error from the server, an HTTP status,
 * a timeout, a network failure. Messages hold no URL and no header.
 */
export function mcpFailure(error: unknown, egress: EgressFailure | undefined): McpFailure {
  const cut = egress ?? egressFailureIn(error);
  if (cut) return httpError(cut.outcome, cut.code, cut.message);
  if (error instanceof ProtocolError)
    return { outcome: 'protocol_error', error: { type: 'mcp_protocol_error', code: error.code, message: quoted(error.message) } };
  if (error instanceof SdkHttpError) {
    const status = error.status;
    return httpError('http_error', status, `The MCP server answered HTTP ${status}${error.statusText ? ` (${quoted(error.statusText)})` : ''}.`);
  }
  if (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout) return httpError('timeout', 504, 'The MCP server did not answer in time.');
  if (error instanceof SdkError) return httpError('http_error', 502, `The MCP server's answer could not be used: ${quoted(error.message)}`);
  const code = networkCode(error);
  if (code) return httpError('http_error', 502, `Could not reach the MCP server (${code}).`);
  return httpError('http_error', 502, `The exchange with the MCP server failed: ${quoted(error instanceof Error ? error.message : String(error))}`);
}
