import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { RequestOptions } from '@modelcontextprotocol/client';
import type { McpEgress } from './mcp-egress';
import type { McpServer } from './mcp-types';

/** What this service tells MCP servers it is. */
const CLIENT_INFO = { name: 'queued-chat-completions', version: '0.1.0' };
/** Pages of a tool listing walked at most (each one bounded by MCP_MAX_RESULT_BYTES). */
const MAX_LIST_PAGES = 16;

/**
 * One MCP session over streamable HTTP, through the exchange's guarded fetch: connect
 * (initialize), one use, then close, ending the session on the server (DELETE) when it had one.
 * Legacy HTTP+SSE servers are not spoken to.
 */
export class McpSession {
  private readonly client = new Client(CLIENT_INFO, { capabilities: {}, listMaxPages: MAX_LIST_PAGES });
  private readonly transport: StreamableHTTPClientTransport;

  constructor(
    server: McpServer,
    private readonly egress: McpEgress,
    private readonly timeoutMs: number,
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

  async run<T>(use: (client: Client, options: RequestOptions) => Promise<T>): Promise<T> {
    const options: RequestOptions = { signal: this.egress.signal, timeout: this.timeoutMs };
    await this.client.connect(this.transport, options);
    return use(this.client, options);
  }

  /** Never throws: ends the session on the server if all went well, then closes everything of it. */
  async close(): Promise<void> {
    if (!this.egress.failure && this.transport.sessionId !== undefined) await this.transport.terminateSession().catch(() => undefined);
    await this.client.close().catch(() => undefined);
    await this.egress.close();
  }
}
