import { Agent, OpenAIResponsesModel, hostedMcpTool, run, setTracingDisabled } from '@openai/agents';
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import OpenAI from 'openai';
import { startEverythingServer } from '../tools/local-stack/everything-mcp-server';
import type { EverythingServer } from '../tools/local-stack/everything-mcp-server';
import { assertMatchesResponsesSchema } from './support/openai-responses-schema';
import { eventOutline, expectWellFormedStream, streamResponseEvents } from './support/response-events';
import { STACK_API_KEY, STACK_MODEL, ServiceStack } from './support/service-stack';
import { ResponsesSocketClient, finalResponse } from './support/responses-socket';

type Item = OpenAI.Responses.ResponseOutputItem;
const ofType = <T extends Item['type']>(output: Item[], type: T): Array<Extract<Item, { type: T }>> =>
  output.filter((item): item is Extract<Item, { type: T }> => item.type === type);

/**
 * Remote MCP tools (`tools: [{type: "mcp"}]`) on the real llama worker: the service lists the
 * published reference server's tools (`@modelcontextprotocol/server-everything` over streamable
 * HTTP on loopback, allowlisted), the model is forced to call one, the service calls the server and
 * the next turn sees its real output. Through openai-node, raw SSE (every event against OpenAI's
 * schema) and the Agents SDK's `hostedMcpTool`; approvals over `previous_response_id`; a server the
 * operator did not allow is refused, and nothing reaches it.
 */
describe('Responses: remote MCP tools', () => {
  let everything: EverythingServer;
  /** A second server, allowlisted too, that a test kills. */
  let doomed: EverythingServer;
  let stack: ServiceStack;
  let client: OpenAI;
  const secret = 'sk-mcp-header-secret-0123456789';
  const server = (extra: Partial<OpenAI.Responses.Tool.Mcp> = {}): OpenAI.Responses.Tool.Mcp => ({
    type: 'mcp',
    server_label: 'everything',
    server_url: everything.url,
    allowed_tools: ['echo', 'get-sum'],
    require_approval: 'never',
    headers: { 'X-Test-Secret': secret },
    ...extra,
  });

  beforeAll(async () => {
    [everything, doomed] = await Promise.all([startEverythingServer('mcp-everything'), startEverythingServer('mcp-everything-doomed')]);
    stack = await ServiceStack.start({
      name: 'responses-mcp',
      parallelSequences: 2,
      apiEnv: { MCP_ALLOWED_SERVERS: `http://127.0.0.1:${everything.port}/,http://127.0.0.1:${doomed.port}/`, AFFINITY: 'false' },
    });
    client = new OpenAI({ baseURL: stack.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    await everything?.process.stop('SIGKILL');
    await doomed?.process.stop('SIGKILL');
  });

  it('lists the server, makes the forced call with its real output, and answers after it', async () => {
    const response = await client.responses.create({
      model: STACK_MODEL,
      input: 'Echo the word hello.',
      tools: [server()],
      tool_choice: { type: 'mcp', server_label: 'everything', name: 'echo' },
      parallel_tool_calls: false,
      max_tool_calls: 3,
      max_output_tokens: 200,
    });
    assertMatchesResponsesSchema('Response', response);
    const [listed] = ofType(response.output, 'mcp_list_tools');
    expect(listed).toMatchObject({ server_label: 'everything', error: null });
    expect(listed.tools.map((tool) => tool.name).sort()).toEqual(['echo', 'get-sum']);
    expect(listed.tools.find((tool) => tool.name === 'echo')?.input_schema).toMatchObject({ properties: { message: { type: 'string' } } });
    const [call] = ofType(response.output, 'mcp_call');
    expect(call).toMatchObject({ server_label: 'everything', name: 'echo', status: 'completed', error: null });
    const { message } = JSON.parse(call.arguments) as { message: string };
    expect(call.output).toBe(`Echo: ${message}`);
    expect(response.output[0].type).toBe('mcp_list_tools');
    // The answer after the call: a message, or (the generated model calls again) the bound's incomplete.
    if (response.status === 'incomplete') expect(['max_output_tokens', 'max_tool_calls']).toContain(response.incomplete_details?.reason);
    else expect(response.output.at(-1)?.type).toBe('message');
    expect(response.usage?.output_tokens).toBeGreaterThan(0);
    // The headers (its credentials) reach the server, and never the response or its stored copy.
    expect(response.tools[0]).toMatchObject({ type: 'mcp', server_label: 'everything', headers: null });
    const stored = await client.responses.retrieve(response.id);
    expect(JSON.stringify(stored)).not.toContain(secret);
    expect(JSON.stringify(response)).not.toContain(secret);
  });

  it('streams the loop as OpenAI does, every event valid and in order', async () => {
    const { status, events } = await streamResponseEvents(stack.baseUrl, STACK_API_KEY, {
      model: STACK_MODEL,
      input: 'Add 2 and 3.',
      tools: [server()],
      tool_choice: { type: 'mcp', server_label: 'everything', name: 'get-sum' },
      parallel_tool_calls: false,
      max_tool_calls: 1,
      max_output_tokens: 100,
    });
    expect(status).toBe(200);
    const terminal = events.at(-1)?.event ?? '';
    expectWellFormedStream(events, terminal);
    expect(['response.completed', 'response.incomplete']).toContain(terminal);
    const outline = eventOutline(events);
    const listStart = outline.indexOf('response.output_item.added');
    expect(outline.slice(listStart, listStart + 4)).toEqual([
      'response.output_item.added',
      'response.mcp_list_tools.in_progress',
      'response.mcp_list_tools.completed',
      'response.output_item.done',
    ]);
    const types = events.map((event) => event.event);
    const callStart = types.indexOf('response.mcp_call.in_progress');
    expect(types[callStart - 1]).toBe('response.output_item.added');
    const callEnd = types.indexOf('response.mcp_call.completed');
    expect(types.slice(callStart + 1, callEnd).every((type) => type.startsWith('response.mcp_call_arguments.'))).toBe(true);
    expect(types[callEnd - 1]).toBe('response.mcp_call_arguments.done');
    expect(types[callEnd + 1]).toBe('response.output_item.done');
    const done = events[callEnd + 1].data.item as { type: string; arguments: string; output: string };
    const { a, b } = JSON.parse(done.arguments) as { a: number; b: number };
    expect(done).toMatchObject({ type: 'mcp_call', output: expect.stringContaining(String(a + b)) as string });
  });

  it('asks for approval, then makes the approved call once; a declined one is told to the model', async () => {
    const asked = await client.responses.create({
      model: STACK_MODEL,
      input: 'Echo the word hi.',
      tools: [server({ require_approval: 'always' })],
      tool_choice: { type: 'mcp', server_label: 'everything', name: 'echo' },
      parallel_tool_calls: false,
      max_output_tokens: 100,
    });
    assertMatchesResponsesSchema('Response', asked);
    const [request] = ofType(asked.output, 'mcp_approval_request');
    expect(request).toMatchObject({ server_label: 'everything', name: 'echo', id: expect.stringMatching(/^mcpr_/) as string });
    expect(ofType(asked.output, 'mcp_call')).toEqual([]);
    expect(asked.status).toBe('completed');

    const approved = await client.responses.create({
      model: STACK_MODEL,
      previous_response_id: asked.id,
      input: [{ type: 'mcp_approval_response', approval_request_id: request.id, approve: true }],
      tools: [server({ require_approval: 'always' })],
      parallel_tool_calls: false,
      max_output_tokens: 60,
    });
    assertMatchesResponsesSchema('Response', approved);
    // Listed once per conversation; the call made on the approval, with the server's output.
    expect(ofType(approved.output, 'mcp_list_tools')).toEqual([]);
    const [made] = ofType(approved.output, 'mcp_call');
    expect(made).toMatchObject({ approval_request_id: request.id, name: 'echo', arguments: request.arguments, status: 'completed' });
    expect(made.output).toBe(`Echo: ${(JSON.parse(request.arguments) as { message: string }).message}`);
    expect(approved.output.indexOf(made)).toBe(0);

    const declined = await client.responses.create({
      model: STACK_MODEL,
      previous_response_id: asked.id,
      input: [{ type: 'mcp_approval_response', approval_request_id: request.id, approve: false, reason: 'not now' }],
      tools: [server({ require_approval: 'always' })],
      tool_choice: 'none',
      max_output_tokens: 30,
    });
    expect(ofType(declined.output, 'mcp_call')).toEqual([]);
    expect(declined.output.at(-1)?.type).toBe('message');
  });

  it('runs the loop over a WebSocket, an approval continuing an unstored response on the same connection', async () => {
    const socket = new ResponsesSocketClient(stack.baseUrl, STACK_API_KEY);
    try {
      const tools = [server({ require_approval: 'always' })];
      const asked = finalResponse(
        await socket.turn({
          model: STACK_MODEL,
          store: false,
          input: 'Echo the word socket.',
          tools,
          tool_choice: { type: 'mcp', server_label: 'everything', name: 'echo' },
          max_output_tokens: 60,
        }),
      );
      const [request] = ofType(asked.output, 'mcp_approval_request');
      expect(request).toMatchObject({ name: 'echo' });
      const events = await socket.turn({
        model: STACK_MODEL,
        store: false,
        previous_response_id: asked.id,
        input: [{ type: 'mcp_approval_response', approval_request_id: request.id, approve: true }],
        tools,
        tool_choice: 'none',
        max_output_tokens: 30,
      });
      expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
      const [made] = ofType(finalResponse(events).output, 'mcp_call');
      expect(made).toMatchObject({ approval_request_id: request.id, status: 'completed', output: expect.stringMatching(/^Echo: /) as string });
    } finally {
      socket.close();
    }
  });

  it("runs through the Agents SDK's hostedMcpTool", async () => {
    setTracingDisabled(true);
    const agent = new Agent({
      name: 'Echoer',
      instructions: 'Use the tools.',
      model: new OpenAIResponsesModel(client, STACK_MODEL),
      tools: [hostedMcpTool({ serverLabel: 'everything', serverUrl: everything.url, allowedTools: ['echo'], requireApproval: 'never' })],
      // The SDK refuses an incomplete response: the sampled answer must end by itself (as in responses-agents.e2e-spec.ts),
      // within the tokens and calls it is given.
      modelSettings: { toolChoice: 'mcp', parallelToolCalls: false, maxTokens: 2000, providerData: { max_tool_calls: 8 } },
    });
    const result = await run(agent, 'Echo the word agent.', { maxTurns: 2 });
    // The SDK gives each MCP item as a hosted tool call named by the item's type.
    const calls = result.newItems.flatMap((item) => (item.type === 'tool_call_item' && item.rawItem.type === 'hosted_tool_call' ? [item.rawItem] : []));
    expect(calls.map((call) => call.name).slice(0, 2)).toEqual(['mcp_list_tools', 'mcp_call']);
    expect(calls[1]).toMatchObject({ status: 'completed', providerData: { name: 'echo', server_label: 'everything' } });
    expect(calls[1].output).toMatch(/^Echo: /);
  });

  it("gives the model a server's failure as the call's result, never a 500", async () => {
    const tools = [server({ server_label: 'doomed', server_url: doomed.url })];
    const body = {
      model: STACK_MODEL,
      input: 'Echo the word gone.',
      tools,
      tool_choice: { type: 'mcp', server_label: 'doomed', name: 'echo' },
      parallel_tool_calls: false,
      max_tool_calls: 1,
      max_output_tokens: 60,
    } as const;
    try {
      await client.responses.create({ ...body, store: false });
    } finally {
      await doomed.process.stop('SIGKILL');
    }
    // Its list is still cached; the call finds nobody there.
    const response = await client.responses.create(body);
    assertMatchesResponsesSchema('Response', response);
    const [call] = ofType(response.output, 'mcp_call');
    expect(call).toMatchObject({ status: 'failed', output: null, error: { type: 'http_error' } });
    expect(['completed', 'incomplete']).toContain(response.status);
  });

  it('refuses a server the operator did not allow, and nothing reaches it', async () => {
    let connections = 0;
    const target: Server = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    const { port } = target.address() as { port: number };
    try {
      await expect(
        client.responses.create({
          model: STACK_MODEL,
          input: 'hi',
          tools: [server({ server_url: `http://127.0.0.1:${port}/mcp` })],
        }),
      ).rejects.toMatchObject({ status: 400, param: 'tools[0].server_url' });
      expect(connections).toBe(0);
    } finally {
      target.close();
    }
  });
});
