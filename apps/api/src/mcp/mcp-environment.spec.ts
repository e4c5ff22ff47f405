import { ApiEnv, InvalidEnvironmentError, loadEnv } from '@app/config';

const load = (vars: NodeJS.ProcessEnv): ApiEnv => loadEnv(ApiEnv, { API_KEYS: 'sk-test-key-123', ...vars });

function refusal(vars: NodeJS.ProcessEnv): string {
  try {
    load(vars);
  } catch (error) {
    if (error instanceof InvalidEnvironmentError) return error.message;
    throw error;
  }
  throw new Error('accepted');
}

describe('MCP environment', () => {
  it('has no server by URL and none registered by default, and the documented bounds', () => {
    expect(load({})).toMatchObject({
      MCP_ALLOWED_SERVERS: [],
      MCP_SERVERS: [],
      MCP_CALL_TIMEOUT_MS: 30_000,
      MCP_MAX_RESULT_BYTES: 1024 * 1024,
      MCP_MAX_TOOLS_PER_SERVER: 128,
      MCP_MAX_SERVERS_PER_REQUEST: 8,
      MCP_MAX_CALLS_PER_RESPONSE: 16,
      MCP_LIST_CACHE_MS: 60_000,
    });
  });

  it('reads the allowlist and the registered servers', () => {
    const env = load({
      MCP_ALLOWED_SERVERS: 'https://mcp.example.com/, *.example.org, 127.0.0.1:4010, [::1]:4010, *',
      MCP_SERVERS: JSON.stringify([
        { label: 'docs', url: 'https://docs.internal/mcp', headers: { Authorization: 'Bearer t' } },
        { label: 'wiki', url: 'http://10.0.0.5:9000/mcp' },
      ]),
    });
    expect(env.MCP_ALLOWED_SERVERS).toEqual(['https://mcp.example.com/', '*.example.org', '127.0.0.1:4010', '[::1]:4010', '*']);
    expect(env.MCP_SERVERS).toEqual([
      { label: 'docs', url: 'https://docs.internal/mcp', headers: { Authorization: 'Bearer t' } },
      { label: 'wiki', url: 'http://10.0.0.5:9000/mcp', headers: {} },
    ]);
  });

  it.each([
    'not json',
    '{"label":"docs","url":"https://docs.internal/mcp"}',
    '[{"label":"docs","url":"ftp://docs.internal/"}]',
    '[{"label":"docs","url":"https://user:Secret-Token@docs.internal/"}]',
    '[{"label":"has space","url":"https://docs.internal/"}]',
    '[{"label":"docs","url":"https://a/"},{"label":"docs","url":"https://b/"}]',
    '[{"label":"docs","url":"https://a/","headers":{"Authorization":1}}]',
    '[{"label":"docs","url":"https://a/","token":"Secret-Token"}]',
  ])('stops at boot on MCP_SERVERS=%s, without showing it', (value) => {
    const message = refusal({ MCP_SERVERS: value });
    expect(message).toContain('MCP_SERVERS');
    expect(message).not.toContain('Secret-Token');
    expect(message).toContain('value not shown');
  });

  it.each(['https://user:pw@mcp.example.com/', 'mcp.example.com/path', 'javascript:alert(1)', '*.', 'a b'])(
    'stops at boot on the allowlist entry %s',
    (entry) => {
      expect(refusal({ MCP_ALLOWED_SERVERS: entry })).toContain('MCP_ALLOWED_SERVERS');
    },
  );
});
