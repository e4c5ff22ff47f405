import { ApiEnv, loadEnv } from '@app/config';
import { createServer as createHttpServer, request as httpRequest } from 'node:http';
import type { IncomingHttpHeaders, Server as HttpServer, ServerResponse } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import type { AddressInfo, Server as TcpServer } from 'node:net';
import { Registry } from 'prom-client';
import { OpenAiError } from '../apps/api/src/errors/openai-error';
import { McpGateway } from '../apps/api/src/mcp/mcp-gateway';
import { McpMetrics } from '../apps/api/src/mcp/mcp-metrics';
import type { McpCallResult, McpServer } from '../apps/api/src/mcp/mcp-types';
import { freePort } from '../tools/local-stack/free-port';
import type { ManagedProcess } from '../tools/local-stack/managed-process';
import { startEverythingServer } from '../tools/local-stack/everything-mcp-server';

/**
 * The outbound side of remote MCP tools against real servers on real sockets: the published
 * reference server (`@modelcontextprotocol/server-everything`, streamable HTTP) for what works
 * (behind a thin proxy where the handshakes on the wire are counted), and plain Node servers for
 * what must not: a listener that counts connections where none may
 * arrive, a redirect, a body of 100 MB, a server that never answers.
 */

const API_KEY = 'sk-mcp-egress-test-0123';

interface Started {
  gateway: McpGateway;
  registry: Registry;
}

const gateways: McpGateway[] = [];
const closers: Array<() => Promise<void>> = [];

/** A gateway on an ApiEnv read as the API reads it, from these variables. */
function gatewayWith(vars: NodeJS.ProcessEnv): Started {
  const registry = new Registry();
  const gateway = new McpGateway(loadEnv(ApiEnv, { API_KEYS: API_KEY, ...vars }), new McpMetrics(registry));
  gateways.push(gateway);
  return { gateway, registry };
}

/** A TCP listener that only counts who connects: where a refused call must never arrive. */
async function tripwire(): Promise<{ port: number; connections: () => number }> {
  let connections = 0;
  const server: TcpServer = createTcpServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  closers.push(() => new Promise<void>((done) => server.close(() => done())));
  return { port: (server.address() as AddressInfo).port, connections: () => connections };
}

/** A plain HTTP server on 127.0.0.1 answering every request with `handle`. */
async function httpServer(
  handle: (body: string, headers: IncomingHttpHeaders, response: ServerResponse, method: string) => void,
): Promise<{ port: number; requests: () => number }> {
  let requests = 0;
  const server: HttpServer = createHttpServer((request, response) => {
    requests++;
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (body += chunk));
    request.on('end', () => handle(body, request.headers, response, request.method ?? 'GET'));
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  closers.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((done) => server.close(() => done()));
  });
  return { port: (server.address() as AddressInfo).port, requests: () => requests };
}

interface JsonRpcRequest {
  id?: number | string;
  method: string;
  params?: { protocolVersion?: string };
}

/** A minimal MCP server by hand (JSON answers, no session): initialize, then `answer` for every other request. */
function jsonRpcServer(answer: (request: JsonRpcRequest) => Record<string, unknown>, seen: IncomingHttpHeaders[] = []) {
  return httpServer((body, headers, response, method) => {
    seen.push(headers);
    if (method !== 'POST') {
      response.writeHead(method === 'DELETE' ? 200 : 405).end();
      return;
    }
    const request = JSON.parse(body) as JsonRpcRequest;
    if (request.id === undefined) {
      response.writeHead(202).end();
      return;
    }
    const reply =
      request.method === 'initialize'
        ? { result: { protocolVersion: request.params?.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'by-hand', version: '1.0.0' } } }
        : answer(request);
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: request.id, ...reply }));
  });
}

/** A thin HTTP proxy to 127.0.0.1:`target`/mcp that keeps the headers of every `initialize` passing through: the handshakes on the wire. */
async function handshakeCounter(target: number): Promise<{ port: number; initializes: IncomingHttpHeaders[] }> {
  const initializes: IncomingHttpHeaders[] = [];
  const { port } = await httpServer((body, headers, response, method) => {
    if (method === 'POST' && (JSON.parse(body) as JsonRpcRequest).method === 'initialize') initializes.push(headers);
    const upstream = httpRequest({ host: '127.0.0.1', port: target, path: '/mcp', method, headers }, (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(response);
    });
    upstream.on('error', () => response.writeHead(502).end());
    upstream.end(body);
  });
  return { port, initializes };
}

/**
 * A minimal MCP server by hand that keeps sessions as the spec says: an id given at initialize,
 * HTTP 404 for a request with an id it does not hold (`forget` drops them all, as a restart
 * would), DELETE ends one. Every other request gets `answer(call number)`, or is left unanswered for `null`.
 */
async function sessionServer(answer: (call: number) => { status: number; reply?: Record<string, unknown> } | null) {
  const sessions = new Set<string>();
  const seen = { initializes: 0, calls: 0, deletes: [] as string[] };
  let next = 0;
  const { port } = await httpServer((body, headers, response, method) => {
    const id = headers['mcp-session-id'] as string | undefined;
    if (method === 'DELETE') {
      if (id !== undefined && sessions.delete(id)) seen.deletes.push(id);
      response.writeHead(200).end();
      return;
    }
    if (method !== 'POST') return void response.writeHead(405).end();
    const request = JSON.parse(body) as JsonRpcRequest;
    if (request.method === 'initialize') {
      seen.initializes++;
      const session = `session-${++next}`;
      sessions.add(session);
      const result = { protocolVersion: request.params?.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'by-hand', version: '1.0.0' } };
      response
        .writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': session })
        .end(JSON.stringify({ jsonrpc: '2.0', id: request.id, result }));
      return;
    }
    if (id === undefined || !sessions.has(id)) return void response.writeHead(404).end();
    if (request.id === undefined) return void response.writeHead(202).end();
    const answered = answer(++seen.calls);
    if (answered === null) return;
    response
      .writeHead(answered.status, { 'content-type': 'application/json' })
      .end(JSON.stringify({ jsonrpc: '2.0', id: request.id, ...(answered.reply ?? { result: { content: [{ type: 'text', text: `call ${seen.calls}` }] } }) }));
  });
  return { port, url: `http://127.0.0.1:${port}/mcp`, seen, forget: () => sessions.clear(), sessions: () => sessions.size };
}

function serverFor(gateway: McpGateway, server_url: string, extra: Record<string, unknown> = {}): McpServer {
  return gateway.resolve({ type: 'mcp', server_label: 'test', server_url, ...extra } as Record<string, unknown>, 'tools[0]');
}

function refusal(run: () => unknown): OpenAiError {
  try {
    run();
  } catch (error) {
    if (error instanceof OpenAiError) return error;
    throw error;
  }
  throw new Error('resolve accepted the tool');
}

const httpError = (result: McpCallResult): { code: number; message: string } => {
  if (!('error' in result) || result.error.type !== 'http_error') throw new Error(`expected an http_error, got ${JSON.stringify(result)}`);
  return result.error;
};

async function sample(registry: Registry, name: string, labels: Record<string, string>): Promise<number> {
  const metric = (await registry.getMetricsAsJSON()).find((candidate) => candidate.name === name);
  const found = metric?.values.find((value) => Object.entries(labels).every(([key, wanted]) => value.labels[key] === wanted));
  return found?.value ?? 0;
}

describe('MCP egress', () => {
  let everything: ManagedProcess;
  let everythingPort: number;
  let everythingUrl: string;

  beforeAll(async () => {
    everythingPort = await freePort();
    everythingUrl = `http://127.0.0.1:${everythingPort}/mcp`;
    everything = await startEverythingServer('mcp-egress-everything', everythingPort).then((server) => server.process);
  });

  afterEach(async () => {
    await Promise.all(gateways.splice(0).map((gateway) => gateway.onModuleDestroy()));
    await Promise.all(closers.splice(0).map((close) => close()));
  });

  afterAll(async () => {
    await everything.stop();
  });

  describe('a server the allowlist names exactly, on loopback', () => {
    it('lists its tools with their input schemas', async () => {
      const { gateway } = gatewayWith({ MCP_ALLOWED_SERVERS: `127.0.0.1:${everythingPort}` });
      const tools = await gateway.listTools(serverFor(gateway, everythingUrl));
      const byName = new Map(tools.map((tool) => [tool.name, tool]));
      expect(byName.get('echo')).toMatchObject({ input_schema: { type: 'object', properties: { message: { type: 'string' } } } });
      expect(byName.get('get-sum')).toMatchObject({
        description: expect.any(String) as string,
        input_schema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } },
        annotations: { readOnlyHint: true },
      });
    });

    it('calls echo and get-sum', async () => {
      const { gateway, registry } = gatewayWith({ MCP_ALLOWED_SERVERS: `127.0.0.1:${everythingPort}` });
      const server = serverFor(gateway, everythingUrl);
      await expect(gateway.callTool(server, 'echo', { message: 'hello, egress' })).resolves.toEqual({ output: 'Echo: hello, egress' });
      const sum = await gateway.callTool(server, 'get-sum', { a: 19, b: 23 });
      expect('output' in sum && sum.output).toMatch(/\b42\b/);
      expect(await sample(registry, 'llm_api_mcp_calls_total', { server_label: 'test', outcome: 'ok' })).toBe(2);
    });

    it("gives a tool's own error as mcp_tool_execution_error with its content", async () => {
      const { gateway, registry } = gatewayWith({ MCP_ALLOWED_SERVERS: `127.0.0.1:${everythingPort}` });
      const result = await gateway.callTool(serverFor(gateway, everythingUrl), 'get-sum', { a: 'nineteen', b: 23 });
      expect(result).toEqual({ error: { type: 'mcp_tool_execution_error', content: [expect.objectContaining({ type: 'text' })] } });
      expect(await sample(registry, 'llm_api_mcp_calls_total', { server_label: 'test', outcome: 'tool_error' })).toBe(1);
    });

    it('keeps a listing for MCP_LIST_CACHE_MS, per URL and headers', async () => {
      const { gateway, registry } = gatewayWith({ MCP_ALLOWED_SERVERS: `127.0.0.1:${everythingPort}` });
      await gateway.listTools(serverFor(gateway, everythingUrl));
      await gateway.listTools(serverFor(gateway, everythingUrl));
      await gateway.listTools(serverFor(gateway, everythingUrl, { authorization: 'another-client' }));
      expect(await sample(registry, 'llm_api_mcp_tool_lists_total', { outcome: 'ok' })).toBe(2);
      expect(await sample(registry, 'llm_api_mcp_tool_lists_total', { outcome: 'cached' })).toBe(1);
    });
  });

  it('gives a JSON-RPC error as mcp_protocol_error with its code', async () => {
    const { port } = await jsonRpcServer(() => ({ error: { code: -32601, message: 'Method not found: tools/call' } }));
    const { gateway } = gatewayWith({ MCP_ALLOWED_SERVERS: `127.0.0.1:${port}` });
    const result = await gateway.callTool(serverFor(gateway, `http://127.0.0.1:${port}/mcp`), 'anything', {});
    expect(result).toEqual({ error: { type: 'mcp_protocol_error', code: -32601, message: expect.stringContaining('Method not found') as string } });
  });

  it("reaches an operator's registered server by its label alone, with the operator's headers", async () => {
    const seen: IncomingHttpHeaders[] = [];
    const { port } = await jsonRpcServer(
      () => ({
        result: {
          content: [
            { type: 'text', text: 'from docs' },
            { type: 'image', data: 'AA==', mimeType: 'image/png' },
          ],
        },
      }),
      seen,
    );
    const { gateway } = gatewayWith({
      MCP_SERVERS: JSON.stringify([{ label: 'docs', url: `http://127.0.0.1:${port}/mcp`, headers: { Authorization: 'Bearer operator-token' } }]),
    });
    const server = gateway.resolve({ server_label: 'docs' }, 'tools[2]');
    expect(server).toMatchObject({ label: 'docs', registered: true });
    const result = await gateway.callTool(server, 'search', { q: 'x' });
    expect(result).toEqual({ output: 'from docs\n{"type":"image","data":"AA==","mimeType":"image/png"}' });
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((headers) => headers.authorization === 'Bearer operator-token')).toBe(true);
    expect(refusal(() => gateway.resolve({ server_label: 'docs', server_url: 'https://elsewhere.example.com/mcp' }, 'tools[2]'))).toMatchObject({
      status: 400,
      param: 'tools[2].server_url',
    });
  });

  it("sends a request's authorization as a bearer token", async () => {
    const seen: IncomingHttpHeaders[] = [];
    const { port } = await jsonRpcServer(() => ({ result: { content: [{ type: 'text', text: 'ok' }] } }), seen);
    const { gateway } = gatewayWith({ MCP_ALLOWED_SERVERS: `http://127.0.0.1:${port}/mcp` });
    const server = serverFor(gateway, `http://127.0.0.1:${port}/mcp`, { authorization: 'client-token', headers: { 'X-Tenant': 'acme' } });
    await expect(gateway.callTool(server, 'search', {})).resolves.toEqual({ output: 'ok' });
    expect(seen[0]).toMatchObject({ authorization: 'Bearer client-token', 'x-tenant': 'acme' });
  });

  describe('keeps sessions per server between exchanges', () => {
    it('skips the handshake for a second call and a listing to the same server', async () => {
      const proxy = await handshakeCounter(everythingPort);
      const { gateway } = gatewayWith({ MCP_ALLOWED_SERVERS: `127.0.0.1:${proxy.port}` });
      const server = serverFor(gateway, `http://127.0.0.1:${proxy.port}/mcp`);
      await expect(gateway.callTool(server, 'echo', { message: 'one' })).resolves.toEqual({ output: 'Echo: one' });
      await expect(gateway.callTool(server, 'echo', { message: 'two' })).resolves.toEqual({ output: 'Echo: two' });
      await expect(gateway.listTools(server)).resolves.toContainEqual(expect.objectContaining({ name: 'echo' }));
      expect(proxy.initializes).toHaveLength(1);
    });

    it("opens one per set of headers, never sending one client's session to another", async () => {
      const proxy = await handshakeCounter(everythingPort);
      const { gateway } = gatewayWith({ MCP_ALLOWED_SERVERS: `127.0.0.1:${proxy.port}` });
      const url = `http://127.0.0.1:${proxy.port}/mcp`;
      for (const client of ['client-a', 'client-b', 'client-a', 'client-b']) {
        await expect(gateway.callTool(serverFor(gateway, url, { authorization: client }), 'echo', { message: client })).resolves.toEqual({
          output: `Echo: ${client}`,
        });
      }
      expect(proxy.initializes.map((headers) => headers.authorization)).toEqual(['Bearer client-a', 'Bearer client-b']);
    });

    it('answers a call after the server restarted (its sessions gone) on a new session', async () => {
      const port = await freePort();
      let restarted = await startEverythingServer('mcp-egress-everything-restarted', port).then((server) => server.process);
      try {
        const proxy = await handshakeCounter(port);
        const { gateway } = gatewayWith({ MCP_ALLOWED_SERVERS: `127.0.0.1:${proxy.port}` });
        const server = serverFor(gateway, `http://127.0.0.1:${proxy.port}/mcp`);
        await expect(gateway.callTool(server, 'echo', { message: 'before' })).resolves.toEqual({ output: 'Echo: before' });
        await restarted.stop();
        restarted = await startEverythingServer('mcp-egress-everything-restarted', port).then((server) => server.process);
        await expect(gateway.callTool(server, 'echo', { message: 'after' })).resolves.toEqual({ output: 'Echo: after' });
        expect(proxy.initializes).toHaveLength(2);
      } finally {
        await restarted.stop();
      }
    });

    it('retries once on HTTP 404 (session not found, as the spec says), and ends its sessions at shutdown', async () => {
      const by = await sessionServer(() => ({ status: 200 }));
      const { gateway } = gatewayWith({ MCP_ALLOWED_SERVERS: `127.0.0.1:${by.port}` });
      const server = serverFor(gateway, by.url);
      await expect(gateway.callTool(server, 'anything', {})).resolves.toEqual({ output: 'call 1' });
      by.forget();
      await expect(gateway.callTool(server, 'anything', {})).resolves.toEqual({ output: 'call 2' });
      expect(by.seen).toMatchObject({ initializes: 2, calls: 2, deletes: [] });
      await gateway.onModuleDestroy();
      expect(by.seen.deletes).toEqual(['session-2']);
      expect(by.sessions()).toBe(0);
    });

    it('drops a session on an HTTP error or a timeout without retrying, and opens a new one for the next call', async () => {
      const by = await sessionServer((call) =>
        call === 2 ? { status: 500, reply: { error: { code: -32603, message: 'boom' } } } : call === 3 ? null : { status: 200 },
      );
      const { gateway } = gatewayWith({ MCP_ALLOWED_SERVERS: `127.0.0.1:${by.port}`, MCP_CALL_TIMEOUT_MS: '500' });
      const server = serverFor(gateway, by.url);
      await expect(gateway.callTool(server, 'anything', {})).resolves.toEqual({ output: 'call 1' });
      expect(httpError(await gateway.callTool(server, 'anything', {}))).toMatchObject({ code: 500 });
      expect(httpError(await gateway.callTool(server, 'anything', {}))).toMatchObject({ code: 504 });
      await expect(gateway.callTool(server, 'anything', {})).resolves.toEqual({ output: 'call 4' });
      expect(by.seen).toMatchObject({ initializes: 3, calls: 4 });
    });

    it('keeps a session whose server answered a JSON-RPC error', async () => {
      const by = await sessionServer((call) => (call === 1 ? { status: 200, reply: { error: { code: -32602, message: 'Unknown tool' } } } : { status: 200 }));
      const { gateway } = gatewayWith({ MCP_ALLOWED_SERVERS: `127.0.0.1:${by.port}` });
      const server = serverFor(gateway, by.url);
      await expect(gateway.callTool(server, 'nothing', {})).resolves.toMatchObject({ error: { type: 'mcp_protocol_error', code: -32602 } });
      await expect(gateway.callTool(server, 'anything', {})).resolves.toEqual({ output: 'call 2' });
      expect(by.seen.initializes).toBe(1);
    });
  });

  describe('refuses', () => {
    it('a URL while MCP_ALLOWED_SERVERS is empty, one it does not allow, and an unknown label alone, with a 400 naming the field', async () => {
      const wire = await tripwire();
      const url = `http://127.0.0.1:${wire.port}/mcp`;
      expect(refusal(() => serverFor(gatewayWith({}).gateway, url))).toMatchObject({ status: 400, param: 'tools[0].server_url', code: 'unsupported_value' });
      const { gateway } = gatewayWith({ MCP_ALLOWED_SERVERS: 'mcp.example.com,https://tools.example.com/mcp' });
      expect(refusal(() => serverFor(gateway, url))).toMatchObject({ status: 400, param: 'tools[0].server_url', code: 'invalid_value' });
      expect(refusal(() => serverFor(gateway, 'https://tools.example.com/mcpx'))).toMatchObject({ param: 'tools[0].server_url' });
      expect(refusal(() => serverFor(gateway, 'file:///etc/passwd'))).toMatchObject({ param: 'tools[0].server_url', code: 'unsupported_value' });
      expect(refusal(() => serverFor(gateway, 'https://user:pw@mcp.example.com/'))).toMatchObject({ param: 'tools[0].server_url' });
      expect(refusal(() => gateway.resolve({ server_label: 'nobody' }, 'tools[1]'))).toMatchObject({ status: 400, param: 'tools[1].server_label' });
      expect(wire.connections()).toBe(0);
    });

    it.each([
      ['*', '127.0.0.1'],
      ['*', 'localhost'],
      ['*', '[::ffff:127.0.0.1]'],
      ['*', '2130706433'],
    ])('a loopback address behind the broad entry %s (%s): http_error 403 and no connection', async (allowed, host) => {
      const wire = await tripwire();
      const { gateway, registry } = gatewayWith({ MCP_ALLOWED_SERVERS: allowed });
      const server = serverFor(gateway, `http://${host}:${wire.port}/mcp`);
      expect(httpError(await gateway.callTool(server, 'echo', {}))).toMatchObject({ code: 403, message: expect.stringContaining('loopback') as string });
      await expect(gateway.listTools(server)).rejects.toThrow(/loopback/);
      expect(wire.connections()).toBe(0);
      expect(await sample(registry, 'llm_api_mcp_calls_total', { outcome: 'refused' })).toBe(1);
    });

    it('the cloud metadata address (link-local) behind *', async () => {
      const { gateway } = gatewayWith({ MCP_ALLOWED_SERVERS: '*' });
      const server = serverFor(gateway, 'http://169.254.169.254/latest/meta-data/');
      expect(httpError(await gateway.callTool(server, 'echo', {}))).toMatchObject({ code: 403, message: expect.stringContaining('link-local') as string });
    });

    it("this service's own Redis, even where the allowlist names it exactly", async () => {
      const wire = await tripwire();
      const { gateway } = gatewayWith({ MCP_ALLOWED_SERVERS: `127.0.0.1:${wire.port}`, REDIS_URL: `redis://localhost:${wire.port}` });
      const result = await gateway.callTool(serverFor(gateway, `http://127.0.0.1:${wire.port}/`), 'echo', {});
      expect(httpError(result)).toMatchObject({ code: 403, message: expect.stringContaining('Redis') as string });
      expect(wire.connections()).toBe(0);
    });

    it('to follow a redirect: http_error with its status, nothing reaches its target', async () => {
      const wire = await tripwire();
      const redirecting = await httpServer((_body, _headers, response) => response.writeHead(302, { location: `http://127.0.0.1:${wire.port}/mcp` }).end());
      const { gateway } = gatewayWith({ MCP_ALLOWED_SERVERS: `127.0.0.1:${redirecting.port}` });
      const result = await gateway.callTool(serverFor(gateway, `http://127.0.0.1:${redirecting.port}/mcp`), 'echo', {});
      expect(httpError(result)).toMatchObject({ code: 302, message: expect.stringContaining('redirect') as string });
      expect(redirecting.requests()).toBe(1);
      expect(wire.connections()).toBe(0);
    });
  });

  it.each([
    ['application/json', ' '],
    ['text/event-stream', ': padding\n'],
  ])('cuts an answer (%s) beyond MCP_MAX_RESULT_BYTES as it streams: http_error 413, quickly, having read little of it', async (contentType, filler) => {
    let written = 0;
    const chunk = Buffer.from(filler.repeat(Math.ceil((64 * 1024) / filler.length)));
    const huge = await httpServer((_body, _headers, response) => {
      response.writeHead(200, { 'content-type': contentType });
      const more = (): void => {
        while (written < 100 * 1024 * 1024 && !response.destroyed) {
          written += chunk.length;
          if (!response.write(chunk)) return void response.once('drain', more);
        }
        response.end();
      };
      response.on('error', () => undefined);
      more();
    });
    const { gateway } = gatewayWith({ MCP_ALLOWED_SERVERS: `127.0.0.1:${huge.port}`, MCP_MAX_RESULT_BYTES: String(1024 * 1024) });
    const started = Date.now();
    const result = await gateway.callTool(serverFor(gateway, `http://127.0.0.1:${huge.port}/mcp`), 'echo', {});
    expect(httpError(result)).toMatchObject({ code: 413 });
    expect(Date.now() - started).toBeLessThan(5_000);
    // What the server got onto the wire before the client hung up: the limit plus the sockets' buffers, not 100 MB.
    expect(written).toBeLessThan(16 * 1024 * 1024);
  });

  it('gives up on a server that never answers after MCP_CALL_TIMEOUT_MS: http_error 504', async () => {
    const silent = await httpServer(() => undefined);
    const { gateway, registry } = gatewayWith({ MCP_ALLOWED_SERVERS: `127.0.0.1:${silent.port}`, MCP_CALL_TIMEOUT_MS: '500' });
    const started = Date.now();
    const result = await gateway.callTool(serverFor(gateway, `http://127.0.0.1:${silent.port}/mcp`), 'echo', {});
    const elapsed = Date.now() - started;
    expect(httpError(result)).toMatchObject({ code: 504 });
    expect(elapsed).toBeGreaterThanOrEqual(450);
    expect(elapsed).toBeLessThan(3_000);
    expect(await sample(registry, 'llm_api_mcp_calls_total', { outcome: 'timeout' })).toBe(1);
    await expect(gateway.listTools(serverFor(gateway, `http://127.0.0.1:${silent.port}/mcp`))).rejects.toThrow(/did not answer within 500 ms/);
  });

  it("stops when the caller's signal aborts", async () => {
    const silent = await httpServer(() => undefined);
    const { gateway } = gatewayWith({ MCP_ALLOWED_SERVERS: `127.0.0.1:${silent.port}` });
    const started = Date.now();
    const result = await gateway.callTool(serverFor(gateway, `http://127.0.0.1:${silent.port}/mcp`), 'echo', {}, AbortSignal.timeout(200));
    expect(httpError(result)).toMatchObject({ code: 499 });
    expect(Date.now() - started).toBeLessThan(3_000);
  });
});
