import { Injectable, Logger } from '@nestjs/common';
import type { OnModuleDestroy } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import type { CallToolResult, Client, RequestOptions, Tool } from '@modelcontextprotocol/client';
import { performance } from 'node:perf_hooks';
import { McpAllowlist } from './mcp-allowlist';
import { McpEgress } from './mcp-egress';
import { mcpFailure } from './mcp-failures';
import type { McpFailure } from './mcp-failures';
import { McpMetrics } from './mcp-metrics';
import { McpRegisteredServers } from './mcp-registered-servers';
import { ReservedEndpoints } from './mcp-reserved-endpoints';
import { McpServerResolver } from './mcp-server-resolver';
import type { McpToolServerFields } from './mcp-server-resolver';
import { McpSession } from './mcp-session';
import { McpToolListCache } from './mcp-tool-list-cache';
import { McpListError } from './mcp-types';
import type { McpCallResult, McpServer, McpToolInfo } from './mcp-types';

type Exchanged<T> = { ok: true; value: T } | { ok: false; failure: McpFailure };

function toolInfo(tool: Tool): McpToolInfo {
  return {
    name: tool.name,
    description: tool.description ?? null,
    input_schema: tool.inputSchema,
    annotations: (tool.annotations as Record<string, unknown> | undefined) ?? null,
  };
}

/** A tool's text contents, one per line; any other content (an image, a resource) as its JSON. */
function outputText(result: CallToolResult): string {
  if (result.content.length === 0 && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent);
  return result.content.map((block) => (block.type === 'text' ? block.text : JSON.stringify(block))).join('\n');
}

/** A copy per caller: the cached listing is shared. */
const copyOf = (tools: readonly McpToolInfo[]): McpToolInfo[] => tools.map((tool) => ({ ...tool }));

/** `promise`, or a McpListError as soon as `signal` aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(new McpListError('The request was cancelled.'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new McpListError('The request was cancelled.'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

/**
 * The service's outbound side of remote MCP servers, for the Responses door: which server a
 * request's `mcp` tool may reach, its tools, one call. Every exchange is its own session through a
 * guarded fetch (mcp-egress.ts) bounded by MCP_CALL_TIMEOUT_MS and MCP_MAX_RESULT_BYTES; headers
 * and credentials are sent to the server and nowhere else, never logged.
 */
@Injectable()
export class McpGateway implements OnModuleDestroy {
  private readonly logger = new Logger(McpGateway.name);
  private readonly servers: McpServerResolver;
  private readonly reserved: ReservedEndpoints;
  private readonly toolLists: McpToolListCache;
  /** Sessions still closing (their DELETE, their sockets): awaited at shutdown. */
  private readonly closing = new Set<Promise<void>>();

  constructor(
    private readonly env: ApiEnv,
    private readonly metrics: McpMetrics,
  ) {
    this.servers = new McpServerResolver(McpAllowlist.parse(env.MCP_ALLOWED_SERVERS), new McpRegisteredServers(env.MCP_SERVERS));
    this.reserved = new ReservedEndpoints(env);
    this.toolLists = new McpToolListCache(env.MCP_LIST_CACHE_MS);
  }

  /** Resolves a request's `mcp` tool to a server it may reach; throws OpenAiError.invalidRequest(message, `${param}.server_url` (or `${param}.server_label` for a label-only tool that is not registered), 'invalid_value' or 'unsupported_value') when refused. */
  resolve(tool: McpToolServerFields, param: string): McpServer {
    return this.servers.resolve(tool, param);
  }

  /** The server's tools (cached per server url+headers hash for MCP_LIST_CACHE_MS), at most MCP_MAX_TOOLS_PER_SERVER; throws McpListError with a clear message on any failure (never an unhandled rejection). */
  listTools(server: McpServer, signal?: AbortSignal): Promise<McpToolInfo[]> {
    const key = McpToolListCache.keyOf(server);
    const kept = this.toolLists.get(key);
    if (kept) {
      this.metrics.recordList(server, 'cached');
      return untilAborted(kept, signal).then(copyOf);
    }
    // Shared by every request for this server meanwhile, so no one request's signal cuts it.
    const listing = this.fetchTools(server);
    this.toolLists.set(key, listing);
    return untilAborted(listing, signal).then(copyOf);
  }

  /** Calls one tool; never throws for a server fault: returns { error } shaped as OpenAI does (protocol error → mcp_protocol_error with the JSON-RPC code; a tool result with isError → mcp_tool_execution_error with its content; HTTP status ≥400, refused address, timeout, too large → http_error with a code (status, or e.g. 403/504/413) and message). Output: the text contents joined (non-text content as JSON). */
  async callTool(server: McpServer, name: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<McpCallResult> {
    const started = performance.now();
    const exchanged = await this.exchange(server, signal, (client, options) => client.callTool({ name, arguments: args }, options));
    let result: McpCallResult;
    if (!exchanged.ok) {
      result = { error: exchanged.failure.error };
      this.metrics.recordCall(server, exchanged.failure.outcome, (performance.now() - started) / 1000);
    } else if (exchanged.value.isError === true) {
      result = { error: { type: 'mcp_tool_execution_error', content: exchanged.value.content } };
      this.metrics.recordCall(server, 'tool_error', (performance.now() - started) / 1000);
    } else {
      result = { output: outputText(exchanged.value) };
      this.metrics.recordCall(server, 'ok', (performance.now() - started) / 1000);
    }
    return result;
  }

  /** Waits for the sessions still closing, so that no socket outlives the module. */
  async onModuleDestroy(): Promise<void> {
    while (this.closing.size > 0) await Promise.all(this.closing);
  }

  private async fetchTools(server: McpServer): Promise<McpToolInfo[]> {
    const exchanged = await this.exchange(server, undefined, (client, options) => client.listTools(undefined, { ...options, cacheMode: 'bypass' }));
    if (!exchanged.ok) {
      this.metrics.recordList(server, exchanged.failure.outcome);
      throw new McpListError(`Could not list the tools of MCP server \`${server.label}\`: ${exchanged.failure.error.message}`);
    }
    this.metrics.recordList(server, 'ok');
    const { tools } = exchanged.value;
    if (tools.length > this.env.MCP_MAX_TOOLS_PER_SERVER) {
      this.logger.warn(
        `MCP server \`${server.label}\` lists ${tools.length} tools; the first ${this.env.MCP_MAX_TOOLS_PER_SERVER} are kept (MCP_MAX_TOOLS_PER_SERVER)`,
      );
    }
    return tools.slice(0, this.env.MCP_MAX_TOOLS_PER_SERVER).map(toolInfo);
  }

  /** One session with `server` for `use`, its failure described; the session closes in the background, tracked. */
  private async exchange<T>(
    server: McpServer,
    signal: AbortSignal | undefined,
    use: (client: Client, options: RequestOptions) => Promise<T>,
  ): Promise<Exchanged<T>> {
    const reach = this.servers.reach(server);
    if (!reach) {
      return {
        ok: false,
        failure: { outcome: 'refused', error: { type: 'http_error', code: 403, message: 'Refused: this MCP server is not one this service may reach.' } },
      };
    }
    const egress = new McpEgress(
      new URL(server.url),
      { allowSpecialAddresses: reach.namesHost, reserved: this.reserved },
      { timeoutMs: this.env.MCP_CALL_TIMEOUT_MS, maxBytes: this.env.MCP_MAX_RESULT_BYTES },
      signal,
    );
    const session = new McpSession(server, egress, this.env.MCP_CALL_TIMEOUT_MS);
    try {
      return { ok: true, value: await session.run(use) };
    } catch (error) {
      return { ok: false, failure: mcpFailure(error, egress.failure) };
    } finally {
      const closed = session.close();
      this.closing.add(closed);
      void closed.finally(() => this.closing.delete(closed));
    }
  }
}
