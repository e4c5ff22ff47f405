import { Injectable, Logger } from '@nestjs/common';
import type { OnModuleDestroy } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { ProtocolError } from '@modelcontextprotocol/client';
import type { CallToolResult, Client, RequestOptions, Tool } from '@modelcontextprotocol/client';
import { performance } from 'node:perf_hooks';
import { McpAllowlist } from './mcp-allowlist';
import { McpEgress, McpExchange } from './mcp-egress';
import type { EgressLimits } from './mcp-egress';
import { mcpFailure } from './mcp-failures';
import type { McpFailure } from './mcp-failures';
import { McpMetrics } from './mcp-metrics';
import { McpRegisteredServers } from './mcp-registered-servers';
import { ReservedEndpoints } from './mcp-reserved-endpoints';
import { McpServerResolver } from './mcp-server-resolver';
import type { McpToolServerFields } from './mcp-server-resolver';
import { mcpServerKey } from './mcp-server-key';
import { McpSession } from './mcp-session';
import { McpSessionPool } from './mcp-session-pool';
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
 * request's `mcp` tool may reach, its tools, one call. Sessions are kept per server (URL and
 * headers hash, mcp-session-pool.ts), each with its own guarded fetch (mcp-egress.ts); every
 * exchange is bounded by MCP_CALL_TIMEOUT_MS and MCP_MAX_RESULT_BYTES whichever session it runs
 * on, and a session an exchange failed on is dropped. Headers and credentials are sent to the
 * server and nowhere else, never logged.
 */
@Injectable()
export class McpGateway implements OnModuleDestroy {
  private readonly logger = new Logger(McpGateway.name);
  private readonly servers: McpServerResolver;
  private readonly reserved: ReservedEndpoints;
  private readonly toolLists: McpToolListCache;
  private readonly sessions = new McpSessionPool<McpSession>();

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

  /** Closes the sessions kept and waits for those still closing, so that no socket outlives the module. */
  async onModuleDestroy(): Promise<void> {
    await this.sessions.close();
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

  /**
   * `use` on a session with `server` (a kept one when there is one), its failure described. The
   * session goes back to the pool when the exchange went well or the server answered a JSON-RPC
   * error; any other failure drops it. One that had served before and now gets HTTP 404 (the MCP
   * spec's "session not found") or 400 (what servers built on the SDK's example answer for an
   * unknown session id) was forgotten by its server: the exchange is tried once more on a new one,
   * which the server did not run the request the first time to make unsafe.
   */
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
    const key = `${mcpServerKey(server)} ${reach.namesHost ? 'special' : 'public'}`;
    const limits: EgressLimits = { timeoutMs: this.env.MCP_CALL_TIMEOUT_MS, maxBytes: this.env.MCP_MAX_RESULT_BYTES };
    const open = (): McpSession =>
      new McpSession(server, new McpEgress(new URL(server.url), { allowSpecialAddresses: reach.namesHost, reserved: this.reserved }, limits.timeoutMs), limits);
    const exchange = new McpExchange(limits, signal);
    try {
      for (let attempt = 1; ; attempt++) {
        const session = this.sessions.acquire(key, open);
        const reused = session.reused;
        exchange.httpStatus = undefined;
        try {
          const value = await session.run(exchange, use);
          this.sessions.release(key, session);
          return { ok: true, value };
        } catch (error) {
          if (error instanceof ProtocolError && exchange.failure === undefined && exchange.httpStatus === undefined) {
            this.sessions.release(key, session);
          } else {
            this.sessions.discard(session, false);
            const forgotten = reused && exchange.failure === undefined && (exchange.httpStatus === 404 || exchange.httpStatus === 400);
            if (forgotten && attempt === 1) continue;
          }
          return { ok: false, failure: mcpFailure(error, exchange.failure) };
        }
      }
    } finally {
      exchange.end();
    }
  }
}
