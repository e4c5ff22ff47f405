import { ApiEnv, loadEnv } from '@app/config';
import { OpenAiError } from '../errors/openai-error';
import { McpAllowlist } from './mcp-allowlist';
import { McpRegisteredServers } from './mcp-registered-servers';
import { McpServerResolver } from './mcp-server-resolver';
import type { McpToolServerFields } from './mcp-server-resolver';

const DOCS = { label: 'docs', url: 'https://docs.internal:8443/mcp', headers: { Authorization: 'Bearer operator' } };

function resolverWith(vars: NodeJS.ProcessEnv): McpServerResolver {
  const env = loadEnv(ApiEnv, { API_KEYS: 'sk-test-key-123', MCP_SERVERS: JSON.stringify([DOCS]), ...vars });
  return new McpServerResolver(McpAllowlist.parse(env.MCP_ALLOWED_SERVERS), new McpRegisteredServers(env.MCP_SERVERS));
}

function refusal(resolver: McpServerResolver, tool: McpToolServerFields): Pick<OpenAiError, 'status' | 'param' | 'code' | 'message'> {
  try {
    resolver.resolve(tool, 'tools[3]');
  } catch (error) {
    if (error instanceof OpenAiError) return { status: error.status, param: error.param, code: error.code, message: error.message };
    throw error;
  }
  throw new Error('resolved');
}

describe('McpServerResolver', () => {
  const resolver = resolverWith({ MCP_ALLOWED_SERVERS: 'mcp.example.com,*.tools.example.com' });

  it('gives a registered server by its label, with the operator headers over the request ones', () => {
    expect(resolver.resolve({ server_label: 'docs', headers: { 'X-User': 'u1', authorization: 'Bearer mine' } }, 'tools[3]')).toEqual({
      label: 'docs',
      url: DOCS.url,
      headers: { 'X-User': 'u1', Authorization: 'Bearer operator' },
      registered: true,
    });
    expect(resolver.resolve({ server_label: 'docs', server_url: 'https://docs.internal:8443/mcp' }, 'tools[3]')).toMatchObject({ registered: true });
  });

  it('gives an allowed URL with the request headers and authorization', () => {
    expect(
      resolver.resolve({ server_label: 'a', server_url: 'https://mcp.example.com/mcp#frag', authorization: 'tok', headers: { 'X-A': '1' } }, 'tools[3]'),
    ).toEqual({
      label: 'a',
      url: 'https://mcp.example.com/mcp',
      headers: { 'X-A': '1', Authorization: 'Bearer tok' },
      registered: false,
    });
  });

  it.each<[string, McpToolServerFields, string, string]>([
    ['a label of a registered server at another URL', { server_label: 'docs', server_url: 'https://mcp.example.com/' }, 'tools[3].server_url', 'invalid_value'],
    ['an unregistered label alone', { server_label: 'wiki' }, 'tools[3].server_label', 'invalid_value'],
    ['no label', { server_url: 'https://mcp.example.com/' }, 'tools[3].server_label', 'invalid_value'],
    ['a label of other characters', { server_label: 'my server', server_url: 'https://mcp.example.com/' }, 'tools[3].server_label', 'invalid_value'],
    ['a URL not allowed', { server_label: 'a', server_url: 'https://evil.example.net/' }, 'tools[3].server_url', 'invalid_value'],
    ['the domain of a *.domain entry', { server_label: 'a', server_url: 'https://tools.example.com/' }, 'tools[3].server_url', 'invalid_value'],
    ['not a URL', { server_label: 'a', server_url: 'mcp.example.com' }, 'tools[3].server_url', 'invalid_value'],
    ['another scheme', { server_label: 'a', server_url: 'ws://mcp.example.com/' }, 'tools[3].server_url', 'unsupported_value'],
    ['credentials in the URL', { server_label: 'a', server_url: 'https://u:p@mcp.example.com/' }, 'tools[3].server_url', 'invalid_value'],
    ['a connector', { server_label: 'a', connector_id: 'connector_gmail' }, 'tools[3].connector_id', 'unsupported_value'],
    ['headers not an object', { server_label: 'a', server_url: 'https://mcp.example.com/', headers: 'x' }, 'tools[3].headers', 'invalid_value'],
    [
      'a header on two lines',
      { server_label: 'a', server_url: 'https://mcp.example.com/', headers: { 'X-A': 'a\r\nHost: b' } },
      'tools[3].headers',
      'invalid_value',
    ],
    ['a Host header', { server_label: 'a', server_url: 'https://mcp.example.com/', headers: { Host: 'internal' } }, 'tools[3].headers', 'invalid_value'],
    [
      'a session header',
      { server_label: 'a', server_url: 'https://mcp.example.com/', headers: { 'Mcp-Session-Id': 's' } },
      'tools[3].headers',
      'invalid_value',
    ],
    [
      'an authorization that is no string',
      { server_label: 'a', server_url: 'https://mcp.example.com/', authorization: 42 },
      'tools[3].authorization',
      'invalid_value',
    ],
  ])('refuses %s, naming the field', (_case, tool, param, code) => {
    expect(refusal(resolver, tool)).toMatchObject({ status: 400, param, code });
  });

  it('refuses every URL while the allowlist is empty, and never echoes a secret', () => {
    const closed = resolverWith({});
    expect(refusal(closed, { server_label: 'a', server_url: 'https://mcp.example.com/' })).toMatchObject({
      param: 'tools[3].server_url',
      code: 'unsupported_value',
    });
    expect(closed.resolve({ server_label: 'docs' }, 'tools[3]')).toMatchObject({ registered: true });
    const { message } = refusal(resolver, { server_label: 'a', server_url: 'https://mcp.example.com/', headers: { 'X-A': 'secret\nvalue' } });
    expect(message).not.toContain('secret');
  });

  it('reaches only what it would resolve', () => {
    const server = resolver.resolve({ server_label: 'a', server_url: 'https://mcp.example.com/' }, 'tools[3]');
    expect(resolver.reach(server)).toEqual({ namesHost: true });
    expect(resolver.reach({ ...server, url: 'http://169.254.169.254/' })).toBeUndefined();
    expect(resolver.reach({ label: 'docs', url: 'https://evil.example.net/', headers: {}, registered: true })).toBeUndefined();
    expect(resolver.reach({ label: 'docs', url: DOCS.url, headers: {}, registered: false })).toBeUndefined();
    expect(resolver.reach(resolver.resolve({ server_label: 'docs' }, 'tools[3]'))).toEqual({ namesHost: true });
    expect(resolver.reach({ ...server, url: 'https://a.tools.example.com/' })).toEqual({ namesHost: false });
  });
});
