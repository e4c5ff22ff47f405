import { RESPONSE_LOOP_QUEUE_NAME } from '@app/contracts';
import Redis from 'ioredis';
import OpenAI from 'openai';
import { startEverythingServer } from '../tools/local-stack/everything-mcp-server';
import type { EverythingServer } from '../tools/local-stack/everything-mcp-server';
import type { ManagedProcess } from '../tools/local-stack/managed-process';
import { basicAuth, boardJob } from './support/bull-board-api';
import { assertMatchesResponsesSchema } from './support/openai-responses-schema';
import { expectWellFormedStream, parseResponseEvents, streamResponseEvents } from './support/response-events';
import type { ResponseEvent } from './support/response-events';
import { STACK_API_KEY, STACK_MODEL, ServiceStack, waitFor } from './support/service-stack';

type Item = OpenAI.Responses.ResponseOutputItem;

const BOARD_PASSWORD = 'board-password-0123456789';

/** The response's events from the start, as any instance replays them (`GET …?stream=true`). */
async function replayed(baseUrl: string, id: string): Promise<ResponseEvent[]> {
  const response = await fetch(`${baseUrl}/responses/${id}?stream=true`, { headers: { authorization: `Bearer ${STACK_API_KEY}` } });
  expect(response.status).toBe(200);
  return parseResponseEvents(await response.text());
}

/** What a stream says of each event, apart from what differs between two readers (a completion time). */
const eventSkeleton = (events: ResponseEvent[]): string[] => events.map(({ data }) => JSON.stringify({ ...data, response: undefined }));

const finalOutput = (events: ResponseEvent[]): Item[] => (events.at(-1)?.data.response as { output: Item[] }).output;

/**
 * Background responses with remote MCP tools: the loop runs on the loops' queue, not on the
 * request's instance; every step is logged before it is taken, so a resumed stream on any
 * instance repeats the events with their sequence numbers, and when the instance carrying the
 * loop is SIGKILLed during a call another instance carries it on, without making that call
 * again. The reference server (`@modelcontextprotocol/server-everything`) on loopback, allowlisted.
 */
describe('Responses: background remote MCP loops, durable across instances', () => {
  let everything: EverythingServer;
  let stack: ServiceStack;
  let client: OpenAI;
  let redis: Redis;
  const secret = 'sk-mcp-durable-secret-0123456789';
  const echoCall = {
    model: STACK_MODEL,
    input: 'Echo the word hello.',
    tools: [
      {
        type: 'mcp' as const,
        server_label: 'everything',
        server_url: '',
        allowed_tools: ['echo'],
        require_approval: 'never' as const,
        headers: { 'X-Test-Secret': secret },
      },
    ],
    tool_choice: { type: 'mcp' as const, server_label: 'everything', name: 'echo' },
    parallel_tool_calls: false,
    max_tool_calls: 2,
    max_output_tokens: 120,
    background: true,
  };

  const settled = (baseUrl: string, id: string) =>
    waitFor(
      `response ${id} to end`,
      async () => {
        const response = (await (
          await fetch(`${baseUrl}/responses/${id}`, { headers: { authorization: `Bearer ${STACK_API_KEY}` } })
        ).json()) as OpenAI.Responses.Response;
        return response.status !== 'queued' && response.status !== 'in_progress' && response;
      },
      60_000,
    );

  beforeAll(async () => {
    everything = await startEverythingServer('mcp-everything-durable');
    echoCall.tools[0].server_url = everything.url;
    stack = await ServiceStack.start({
      name: 'responses-mcp-durable',
      parallelSequences: 2,
      apiEnv: {
        MCP_ALLOWED_SERVERS: `http://127.0.0.1:${everything.port}/`,
        AFFINITY: 'false',
        MCP_CALL_TIMEOUT_MS: '20000',
        SHUTDOWN_DRAIN_MS: '1000',
        ADMIN_PASSWORD: BOARD_PASSWORD,
      },
    });
    client = new OpenAI({ baseURL: stack.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
    redis = new Redis(stack.redis.url);
  }, 120_000);

  afterAll(async () => {
    redis?.disconnect();
    await stack?.stop();
    await everything?.process.stop('SIGKILL');
  });

  it('runs the loop on the queue; a stream of it, live or resumed, has the same events', async () => {
    const queued = await client.responses.create(echoCall);
    expect(queued.status).toBe('queued');
    const ended = await settled(stack.baseUrl, queued.id);
    assertMatchesResponsesSchema('Response', ended);
    expect(['completed', 'incomplete']).toContain(ended.status);
    expect(ended.output[0]).toMatchObject({ type: 'mcp_list_tools', server_label: 'everything' });
    const call = ended.output.find((item): item is OpenAI.Responses.ResponseOutputItem.McpCall => item.type === 'mcp_call');
    expect(call).toMatchObject({ name: 'echo', status: 'completed', error: null });
    expect(call?.output).toBe(`Echo: ${(JSON.parse(call!.arguments) as { message: string }).message}`);

    // The stream the request itself follows, and one replayed from the start: the same events.
    const live = await streamResponseEvents(stack.baseUrl, STACK_API_KEY, echoCall);
    expect(live.status).toBe(200);
    const terminal = live.events.at(-1)?.event ?? '';
    expect(['response.completed', 'response.incomplete']).toContain(terminal);
    expectWellFormedStream(live.events, terminal);
    const id = (live.events[0].data.response as { id: string }).id;
    const again = await replayed(stack.baseUrl, id);
    expect(eventSkeleton(again)).toEqual(eventSkeleton(live.events));
    expect(finalOutput(again)).toEqual(finalOutput(live.events));
    const stored = await client.responses.retrieve(id);
    expect(stored.output).toEqual(finalOutput(live.events));

    // The credentials are sealed on the loops' queue, as Bull Board shows its job to operators, and kept out of the response.
    const board = `${new URL(stack.baseUrl).origin}/admin/queues`;
    const shown = await boardJob(board, basicAuth('admin', BOARD_PASSWORD), RESPONSE_LOOP_QUEUE_NAME, id);
    expect(shown?.job.data).toMatchObject({ id, request: { tools: [{ type: 'mcp', server_label: 'everything' }] } });
    expect(shown?.job.processedBy).toBeDefined();
    expect(JSON.stringify(shown)).not.toContain(secret);
    expect(JSON.stringify(stored)).not.toContain(secret);
  }, 120_000);

  it('stops where it is when cancelled during a call, and its stream ends', async () => {
    const created = await client.responses.create(echoCall);
    process.kill(everything.process.pid!, 'SIGSTOP');
    try {
      const steps = `{response:${created.id}}:loop-steps`;
      const stepsNow = async () => (await redis.xrange(steps, '-', '+')).map(([, fields]) => JSON.parse(fields[1]) as { s: string; error?: { code: string } });
      await waitFor('the loop to begin its call', async () => (await stepsNow()).some((step) => step.s === 'calling'), 30_000);
      const following = fetch(`${stack.baseUrl}/responses/${created.id}?stream=true`, {
        headers: { authorization: `Bearer ${STACK_API_KEY}` },
      }).then((response) => response.text());
      const cancelledAt = Date.now();
      const cancelled = await client.responses.cancel(created.id);
      expect(cancelled.status).toBe('cancelled');
      // The loop stops its call at once (not when the server's timeout would have), and says so to its streams.
      const failed = await waitFor('the loop to log its end', async () => (await stepsNow()).find((step) => step.s === 'fail'), 5000);
      expect(failed.error?.code).toBe('cancelled');
      expect(Date.now() - cancelledAt).toBeLessThan(5000);
      const events = parseResponseEvents(await following);
      expect(Date.now() - cancelledAt).toBeLessThan(3000);
      expect(events.at(-1)?.event).toBe('response.failed');
      expect((await client.responses.retrieve(created.id)).status).toBe('cancelled');
    } finally {
      process.kill(everything.process.pid!, 'SIGCONT');
    }
  }, 60_000);

  /** The one API instance alive: each test below stops it and starts the next. */
  let live: { baseUrl: string; process: ManagedProcess } | undefined;

  it('is carried on by another instance when the one making a call is SIGKILLed, without making that call again', async () => {
    live ??= stack.api;
    const created = await client.withOptions({ baseURL: live.baseUrl }).responses.create(echoCall);
    // The server stops answering (SIGSTOP): the loop's call hangs until its instance stops.
    process.kill(everything.process.pid!, 'SIGSTOP');
    let resumedServer = false;
    try {
      const steps = `{response:${created.id}}:loop-steps`;
      const stepsNow = async () => (await redis.xrange(steps, '-', '+')).map(([, fields]) => JSON.parse(fields[1]) as { s: string; id?: string });
      const calling = await waitFor('the loop to begin its call', async () => (await stepsNow()).find((step) => step.s === 'calling'), 30_000);
      await live.process.stop('SIGKILL');
      process.kill(everything.process.pid!, 'SIGCONT');
      resumedServer = true;
      const next = await stack.addApi();
      live = next;

      const ended = await settled(next.baseUrl, created.id);
      assertMatchesResponsesSchema('Response', ended);
      expect(['completed', 'incomplete']).toContain(ended.status);
      const interrupted = ended.output.find((item) => item.type === 'mcp_call' && item.id === calling.id) as OpenAI.Responses.ResponseOutputItem.McpCall;
      expect(interrupted.error).toMatchObject({ type: 'http_error', message: expect.stringMatching(/at most once/) as string });
      expect(interrupted.output ?? null).toBeNull();
      // Each item once; the call begun once and never again.
      const ids = ended.output.map((item) => item.id);
      expect(new Set(ids).size).toBe(ids.length);
      expect((await stepsNow()).filter((step) => step.s === 'calling' && step.id === calling.id)).toHaveLength(1);
      // Operators see the loop carried on and the call interrupted.
      const metrics = await (await fetch(`${new URL(next.baseUrl).origin}/metrics`)).text();
      expect(metrics).toMatch(/^llm_api_response_loops_total\{start="carried_on"\} 1$/m);
      expect(metrics).toMatch(/^llm_api_mcp_calls_interrupted_total 1$/m);

      // The whole stream, replayed on the instance that carried it on: no gap, the stored output at its end.
      const events = await replayed(next.baseUrl, created.id);
      const terminal = events.at(-1)?.event ?? '';
      expectWellFormedStream(events, terminal);
      expect(finalOutput(events)).toEqual(ended.output);
    } finally {
      if (!resumedServer) process.kill(everything.process.pid!, 'SIGCONT');
    }
  }, 120_000);

  it('is handed over when the instance carrying it shuts down (SIGTERM) during a model turn, and not failed', async () => {
    live ??= stack.api;
    const [worker] = stack.workers;
    // The worker pauses (SIGSTOP): the loop's first turn waits on the queue while its instance shuts down.
    process.kill(worker.pid!, 'SIGSTOP');
    let resumedWorker = false;
    try {
      const created = await client.withOptions({ baseURL: live.baseUrl }).responses.create(echoCall);
      const steps = `{response:${created.id}}:loop-steps`;
      const stepsNow = async () => (await redis.xrange(steps, '-', '+')).map(([, fields]) => JSON.parse(fields[1]) as { s: string });
      await waitFor('the loop to queue its first turn', async () => (await stepsNow()).some((step) => step.s === 'turn'), 30_000);
      // Its drain (SHUTDOWN_DRAIN_MS) ends the turn it follows; the loop is left to another instance, not failed.
      await live.process.stop('SIGTERM');
      process.kill(worker.pid!, 'SIGCONT');
      resumedWorker = true;
      const next = await stack.addApi();
      live = next;

      const ended = await settled(next.baseUrl, created.id);
      expect(['completed', 'incomplete']).toContain(ended.status);
      expect(ended.output.find((item) => item.type === 'mcp_call')).toMatchObject({ name: 'echo', status: 'completed', error: null });
      expect((await stepsNow()).map((step) => step.s)).not.toContain('fail');
      const metrics = await (await fetch(`${new URL(next.baseUrl).origin}/metrics`)).text();
      expect(metrics).toMatch(/^llm_api_response_loops_total\{start="carried_on"\} 1$/m);
      const events = await replayed(next.baseUrl, created.id);
      expectWellFormedStream(events, events.at(-1)?.event ?? '');
      expect(finalOutput(events)).toEqual(ended.output);
    } finally {
      if (!resumedWorker) process.kill(worker.pid!, 'SIGCONT');
    }
  }, 120_000);
});
