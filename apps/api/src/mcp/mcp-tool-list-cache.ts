import { mcpServerKey } from './mcp-server-key';
import type { McpServer, McpToolInfo } from './mcp-types';

/** Servers whose listings are kept at most; the oldest goes first. */
const MAX_ENTRIES = 512;

interface Entry {
  tools: Promise<McpToolInfo[]>;
  /** When it stops being served; a listing under way is served to whoever asks meanwhile. */
  expiresAt: number;
}

/**
 * A server's tool listing (key: its URL and a hash of its headers, so two clients with different
 * credentials never share one), for MCP_LIST_CACHE_MS after it arrived. A listing under way is
 * shared by every request for that server; a failed one is forgotten at once.
 */
export class McpToolListCache {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly ttlMs: number) {}

  static keyOf(server: McpServer): string {
    return mcpServerKey(server);
  }

  /** The listing kept (or under way) for `key`, if any. */
  get(key: string): Promise<McpToolInfo[]> | undefined {
    const entry = this.entries.get(key);
    if (entry && entry.expiresAt <= Date.now()) this.entries.delete(key);
    return entry && entry.expiresAt > Date.now() ? entry.tools : undefined;
  }

  /** Keeps `tools` (under way) for `key`: from its arrival for the TTL, or forgotten if it fails. */
  set(key: string, tools: Promise<McpToolInfo[]>): void {
    const entry: Entry = { tools, expiresAt: Number.POSITIVE_INFINITY };
    this.entries.delete(key);
    this.entries.set(key, entry);
    while (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value as string);
    const forget = (): void => {
      if (this.entries.get(key) === entry) this.entries.delete(key);
    };
    tools.then(() => {
      entry.expiresAt = Date.now() + this.ttlMs;
      if (this.ttlMs === 0) forget();
    }, forget);
  }
}
