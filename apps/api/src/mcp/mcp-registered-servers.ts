import type { McpServerRegistration } from '@app/config';
import type { McpServer } from './mcp-types';

/**
 * The servers the operator registers (MCP_SERVERS), by label: a request naming one by its
 * `server_label` gets it with the operator's headers. They are reachable whatever the allowlist
 * says, at any address: the operator named them.
 */
export class McpRegisteredServers {
  private readonly byLabel: ReadonlyMap<string, McpServerRegistration>;

  constructor(registrations: readonly McpServerRegistration[]) {
    this.byLabel = new Map(registrations.map((registration) => [registration.label, registration]));
  }

  /** The server registered as `label`, with `requestHeaders` under the operator's (the operator's win a name both give). */
  get(label: string, requestHeaders: Record<string, string> = {}): McpServer | undefined {
    const registration = this.byLabel.get(label);
    if (!registration) return undefined;
    const operatorNames = new Set(Object.keys(registration.headers).map((name) => name.toLowerCase()));
    const fromRequest = Object.entries(requestHeaders).filter(([name]) => !operatorNames.has(name.toLowerCase()));
    return { label, url: registration.url, headers: { ...Object.fromEntries(fromRequest), ...registration.headers }, registered: true };
  }

  /** Whether `server` is one of these as registered: its label names a registration with its URL. */
  holds(server: McpServer): boolean {
    return server.registered && this.byLabel.get(server.label)?.url === server.url;
  }
}
