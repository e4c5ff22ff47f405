import { Counter, Histogram } from 'prom-client';
import type { Registry } from 'prom-client';
import type { McpServer } from './mcp-types';

/** Seconds an MCP call takes, from a local server's milliseconds to MCP_CALL_TIMEOUT_MS's default and beyond. */
const CALL_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Labels kept for servers given by URL (their label is the client's choice); the rest count as `other`. */
const MAX_REQUEST_LABELS = 100;

/** How a call ended; `cancelled`: the client went away first. */
export type McpCallOutcome = 'ok' | 'tool_error' | 'protocol_error' | 'http_error' | 'refused' | 'timeout' | 'cancelled';
/** How a listing ended; `cached`: served from MCP_LIST_CACHE_MS's cache (or joined one under way). */
export type McpListOutcome = 'ok' | 'cached' | Exclude<McpCallOutcome, 'ok' | 'tool_error'>;

/**
 * The remote MCP servers' metrics, in the API's registry (ApiMetrics, served at /metrics):
 * calls by server and outcome, their latency, and tool listings. A registered server is counted
 * by its label; one given by URL by the label the request chose, for the first 100 per process.
 */
export class McpMetrics {
  private readonly calls: Counter<'server_label' | 'outcome'>;
  private readonly callDuration: Histogram<'server_label'>;
  private readonly toolLists: Counter<'server_label' | 'outcome'>;
  private readonly requestLabels = new Set<string>();

  constructor(registry: Registry) {
    this.calls = new Counter({
      name: 'llm_api_mcp_calls_total',
      help: 'MCP tool calls this API made for responses, by server label and outcome: ok, tool_error (the tool reported an error), protocol_error (a JSON-RPC error), http_error (an HTTP status, a redirect, an answer over MCP_MAX_RESULT_BYTES, a network failure), refused (an address this service does not connect to), timeout (MCP_CALL_TIMEOUT_MS), cancelled (the client went away).',
      labelNames: ['server_label', 'outcome'] as const,
      registers: [registry],
    });
    this.callDuration = new Histogram({
      name: 'llm_api_mcp_call_duration_seconds',
      help: 'Time an MCP tool call took, connecting included, by server label.',
      labelNames: ['server_label'] as const,
      buckets: CALL_SECONDS,
      registers: [registry],
    });
    this.toolLists = new Counter({
      name: 'llm_api_mcp_tool_lists_total',
      help: "Tool listings of MCP servers, by server label and outcome: ok, cached (MCP_LIST_CACHE_MS's cache, or a listing already under way), and the failures of llm_api_mcp_calls_total.",
      labelNames: ['server_label', 'outcome'] as const,
      registers: [registry],
    });
  }

  recordCall(server: McpServer, outcome: McpCallOutcome, seconds: number): void {
    const serverLabel = this.labelOf(server);
    this.calls.inc({ server_label: serverLabel, outcome });
    this.callDuration.observe({ server_label: serverLabel }, seconds);
  }

  recordList(server: McpServer, outcome: McpListOutcome): void {
    this.toolLists.inc({ server_label: this.labelOf(server), outcome });
  }

  private labelOf(server: McpServer): string {
    if (server.registered || this.requestLabels.has(server.label)) return server.label;
    if (this.requestLabels.size >= MAX_REQUEST_LABELS) return 'other';
    this.requestLabels.add(server.label);
    return server.label;
  }
}
