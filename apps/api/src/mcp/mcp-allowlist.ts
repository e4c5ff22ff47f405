/** What an allowlist entry says of a URL it matches. */
export interface AllowlistMatch {
  /**
   * The entry names the URL's host exactly (a URL prefix, a host or `host:port`, not `*` or
   * `*.domain`): the operator meant that host, so it may be reached even at a private address.
   */
  namesHost: boolean;
}

type Entry =
  | { kind: 'prefix'; origin: string; path: string }
  | { kind: 'host'; host: string; port: number | undefined }
  | { kind: 'subdomains'; domain: string; port: number | undefined }
  | { kind: 'any'; port: number | undefined };

/** The port a URL connects to, its scheme's default when it gives none. */
export function effectivePort(url: URL): number {
  return url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
}

/** Host names compare without case and without the root's trailing dot (`Example.COM.` is `example.com`). */
function canonicalHost(hostname: string): string {
  const lower = hostname.toLowerCase();
  return lower.endsWith('.') ? lower.slice(0, -1) : lower;
}

/** `mcp.example.com`, `127.0.0.1:4010`, `[::1]:4010` → its host (as URL writes it) and port. */
function hostAndPort(text: string): { host: string; port: number | undefined } {
  const url = new URL(`http://${text}`);
  if (url.pathname !== '/' || url.search !== '' || url.username !== '' || url.password !== '') throw new Error('not a host');
  const port = /:\d+$/.test(text) ? Number(text.slice(text.lastIndexOf(':') + 1)) : undefined;
  return { host: canonicalHost(url.hostname), port };
}

function parseEntry(text: string): Entry {
  if (/^https?:\/\//i.test(text)) {
    const url = new URL(text);
    if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '')
      throw new Error('a URL prefix has no credentials, query or fragment');
    return { kind: 'prefix', origin: url.origin, path: url.pathname };
  }
  if (text === '*') return { kind: 'any', port: undefined };
  if (text.startsWith('*.')) {
    const { host, port } = hostAndPort(text.slice(2));
    return { kind: 'subdomains', domain: host, port };
  }
  return { kind: 'host', ...hostAndPort(text) };
}

/** A path under a prefix on whole segments: `/mcp` covers `/mcp` and `/mcp/x`, not `/mcpx`; `/tools/` covers what starts with it. */
function underPath(path: string, prefix: string): boolean {
  if (prefix.endsWith('/')) return path.startsWith(prefix);
  return path === prefix || path.startsWith(`${prefix}/`);
}

function matches(entry: Entry, url: URL): AllowlistMatch | undefined {
  const host = canonicalHost(url.hostname);
  const portFits = (port: number | undefined): boolean => port === undefined || port === effectivePort(url);
  switch (entry.kind) {
    case 'prefix':
      return url.origin === entry.origin && underPath(url.pathname, entry.path) ? { namesHost: true } : undefined;
    case 'host':
      return host === entry.host && portFits(entry.port) ? { namesHost: true } : undefined;
    case 'subdomains':
      return host.endsWith(`.${entry.domain}`) && portFits(entry.port) ? { namesHost: false } : undefined;
    case 'any':
      return portFits(entry.port) ? { namesHost: false } : undefined;
  }
}

/**
 * MCP_ALLOWED_SERVERS: the servers a request may name by URL. An entry is a URL prefix
 * (`https://mcp.example.com/`), a host (`mcp.example.com`, optionally `:port`), `*.domain` (its
 * subdomains, not the domain itself) or `*`. Only http and https URLs match.
 */
export class McpAllowlist {
  private constructor(private readonly entries: readonly Entry[]) {}

  /** Throws on an entry that is not one of the forms above (ApiEnv's validation lets only these through). */
  static parse(entries: readonly string[]): McpAllowlist {
    return new McpAllowlist(
      entries.map((text) => {
        try {
          return parseEntry(text.trim());
        } catch {
          throw new Error(`MCP_ALLOWED_SERVERS: \`${text}\` is not a URL prefix, a host, *.domain, host:port or *`);
        }
      }),
    );
  }

  /** No entries: no request may name a server by URL. */
  get empty(): boolean {
    return this.entries.length === 0;
  }

  /** The best match for `url` (one naming its host wins over a wildcard), or `undefined` when no entry allows it. */
  match(url: URL): AllowlistMatch | undefined {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
    let best: AllowlistMatch | undefined;
    for (const entry of this.entries) {
      const found = matches(entry, url);
      if (found?.namesHost) return found;
      best ??= found;
    }
    return best;
  }
}
