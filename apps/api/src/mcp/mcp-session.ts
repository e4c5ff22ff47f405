import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { RequestOptions } from '@modelcontextprotocol/client';
import { McpExchange } from './mcp-egress';
import type { EgressLimits, McpEgress } from './mcp-egress';
import type { McpServer } from './mcp-types';

/** What this service tells MCP servers it is. */
const CLIENT_INFO = { name: 'queued-chat-completions', version: '0.1.0' };
/** Pages of a tool listing walked at most (each one bounded by MCP_MAX_RESULT_BYTES). */
const MAX_LIST_PAGES = 16;

/**
 * One MCP session over streamable HTTP, through its own guarded fetch (McpEgress): connected
 * (initialize) on its first use, then used by one exchange at a time, each under its own bounds,
 * until closed, which ends the session on the server (DELETE) when it had one and all went well.
 * Legacy HTTP+SSE servers are not spoken to.
 */
export class McpSession {
  private readonly client = new Client(CLIENT_INFO, { capabilities: {}, listMaxPages: MAX_LIST_PAGES });
  private readonly transport: StreamableHTTPClientTransport;
  private connected = false;
  private busy = false;
  /** Exchanges run on it: one that has run before may have been forgotten by its server since. */
  private runs = 0;

  constructor(
    server: McpServer,
    private readonly egress: McpEgress,
    private readonly limits: EgressLimits,
  ) {
    this.transport = new StreamableHTTPClientTransport(new URL(server.url), {
      fetch: egress.fetch,
      requestInit: { headers: server.headers },
      // A dropped stream is a failed exchange, not something to come back to.
      reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 1000, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1 },
    });
    // Failures reach the caller through the request they fail; nothing else is to be done with them.
    this.client.onerror = () => undefined;
  }

  /** It has served an exchange before this one: the server may have dropped it meanwhile. */
  get reused(): boolean {
    return this.runs > 0;
  }

  /** Runs `use` inside `exchange` (which the caller ends), connecting first if it is the session's first use. */
  async run<T>(exchange: McpExchange, use: (client: Client, options: RequestOptions) => Promise<T>): Promise<T> {
    if (this.busy) throw new Error('McpSession: one exchange at a time');
    this.busy = true;
    this.egress.begin(exchange);
    try {
      const options: RequestOptions = { signal: exchange.signal, timeout: exchange.limits.timeoutMs };
      if (!this.connected) {
        this.connected = true;
        await this.client.connect(this.transport, options);
      }
      return await use(this.client, options);
    } finally {
      this.runs++;
      this.egress.end(exchange);
      this.busy = false;
    }
  }

  /** Never throws: with `goodbye`, ends the session on the server first (its own bounded exchange); then closes everything of it. */
  async close(goodbye: boolean): Promise<void> {
    if (goodbye && this.connected && !this.busy && this.transport.sessionId !== undefined) {
      const exchange = new McpExchange(this.limits);
      this.egress.begin(exchange);
      await this.transport.terminateSession().catch(() => undefined);
      exchange.end();
      this.egress.end(exchange);
    }
    await this.client.close().catch(() => undefined);
    await this.egress.close();
  }
}
