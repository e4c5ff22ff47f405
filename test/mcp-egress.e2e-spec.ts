import { ApiEnv, loadEnv } from '@app/config';
import { createServer as createHttpServer } from 'node:http';
import type { IncomingHttpHeaders, Server as HttpServer, ServerResponse } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import type { AddressInfo, Server as TcpServer } from 'node:net';
import { resolve } from 'node:path';
import { Registry } from 'prom-client';
import { OpenAiError } from '../apps/api/src/errors/openai-error';
import { McpGateway } from '../apps/api/src/mcp/mcp-gateway';
import { McpMetrics } from '../apps/api/src/mcp/mcp-metrics';
import type { McpCallResult, McpServer } from '../apps/api/src/mcp/mcp-types';
import { freePort } from '../tools/local-stack/free-port';
import { ManagedProcess } from '../tools/local-stack/managed-process';
import { REPO_ROOT } from '../tools/local-stack/services';

/**
 * The outbound side of remote MCP tools against real servers on real sockets: the published
 * reference server (`@modelcontextprotocol/server-everything`, streamable HTTP) for what works,
 * and plain Node servers for what must not: a listener that counts connections where none may
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
    everything = new ManagedProcess({
      name: 'mcp-egress-everything',
      command: process.execPath,
      args: [resolve(REPO_ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js'), 'streamableHttp'],
      env: { ...process.env, PORT: String(everythingPort) },
      logFile: resolve(REPO_ROOT, 'test-artifacts/logs/mcp-egress-everything.log'),
    });
    await everything.waitForOutput(/listening on port/i, 30_000);
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
