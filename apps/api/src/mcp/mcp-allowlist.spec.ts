import { McpAllowlist } from './mcp-allowlist';

const match = (entries: string[], url: string) => McpAllowlist.parse(entries).match(new URL(url));

describe('McpAllowlist', () => {
  it('matches a URL prefix on whole path segments, scheme, host and port', () => {
    const entries = ['https://mcp.example.com/tools'];
    expect(match(entries, 'https://mcp.example.com/tools')).toEqual({ namesHost: true });
    expect(match(entries, 'https://mcp.example.com/tools/search?x=1')).toEqual({ namesHost: true });
    expect(match(entries, 'https://MCP.example.com:443/tools')).toEqual({ namesHost: true });
    expect(match(entries, 'https://mcp.example.com/toolsx')).toBeUndefined();
    expect(match(entries, 'https://mcp.example.com/')).toBeUndefined();
    expect(match(entries, 'http://mcp.example.com/tools')).toBeUndefined();
    expect(match(entries, 'https://mcp.example.com:8443/tools')).toBeUndefined();
    expect(match(entries, 'https://mcp.example.com.evil.net/tools')).toBeUndefined();
    expect(match(['https://mcp.example.com/'], 'https://mcp.example.com/anything/at/all')).toEqual({ namesHost: true });
  });

  it('matches a host on any port, or on the one it names', () => {
    expect(match(['mcp.example.com'], 'http://mcp.example.com:9000/mcp')).toEqual({ namesHost: true });
    expect(match(['mcp.example.com.'], 'https://mcp.example.com/mcp')).toEqual({ namesHost: true });
    expect(match(['mcp.example.com'], 'https://a.mcp.example.com/mcp')).toBeUndefined();
    expect(match(['127.0.0.1:4010'], 'http://127.0.0.1:4010/mcp')).toEqual({ namesHost: true });
    expect(match(['127.0.0.1:4010'], 'http://127.0.0.1:4011/mcp')).toBeUndefined();
    expect(match(['example.com:443'], 'https://example.com/mcp')).toEqual({ namesHost: true });
    expect(match(['example.com:443'], 'http://example.com/mcp')).toBeUndefined();
    expect(match(['[::1]:4010'], 'http://[::1]:4010/mcp')).toEqual({ namesHost: true });
  });

  it('matches wildcards without naming a host', () => {
    expect(match(['*.example.com'], 'https://mcp.example.com/')).toEqual({ namesHost: false });
    expect(match(['*.example.com'], 'https://a.b.example.com/')).toEqual({ namesHost: false });
    expect(match(['*.example.com'], 'https://example.com/')).toBeUndefined();
    expect(match(['*.example.com'], 'https://badexample.com/')).toBeUndefined();
    expect(match(['*.example.com:8443'], 'https://mcp.example.com/')).toBeUndefined();
    expect(match(['*'], 'http://127.0.0.1:6379/')).toEqual({ namesHost: false });
  });

  it('prefers an entry naming the host to a wildcard', () => {
    expect(match(['*', '127.0.0.1:4010'], 'http://127.0.0.1:4010/mcp')).toEqual({ namesHost: true });
    expect(match(['*', '127.0.0.1:4010'], 'http://127.0.0.1:4011/mcp')).toEqual({ namesHost: false });
  });

  it('matches only http and https', () => {
    expect(match(['*'], 'ftp://example.com/')).toBeUndefined();
    expect(match(['*'], 'file:///etc/passwd')).toBeUndefined();
  });

  it('is empty without entries, and refuses an entry of no known form', () => {
    expect(McpAllowlist.parse([]).empty).toBe(true);
    expect(match([], 'https://example.com/')).toBeUndefined();
    expect(() => McpAllowlist.parse(['https://user:pw@example.com/'])).toThrow(/MCP_ALLOWED_SERVERS/);
    expect(() => McpAllowlist.parse(['example.com/path'])).toThrow(/MCP_ALLOWED_SERVERS/);
  });
});
