import { Agent, OpenAIResponsesWSModel, run, setTracingDisabled, tool as agentTool } from '@openai/agents';
import OpenAI from 'openai';
import { ResponsesWebSocketSession } from 'openai/lib/responses/responses-websocket-session';
import { z } from 'zod';
import { expectWellFormedStream } from './support/response-events';
import type { ResponseEvent } from './support/response-events';
import { ResponsesSocketClient, finalResponse } from './support/responses-socket';
import type { SocketEvent } from './support/responses-socket';
import { e2eStack } from './support/stack-env';

const asStream = (events: SocketEvent[]): ResponseEvent[] => events.map((data) => ({ event: data.type, data: data as ResponseEvent['data'] }));

/** A turn's events as a well-formed stream (OpenAI's schema, numbered from 0) that ended as its response did. */
function expectWellFormedTurn(events: SocketEvent[]): OpenAI.Responses.Response {
  const response = finalResponse(events);
  expect(['completed', 'incomplete']).toContain(response.status);
  expectWellFormedStream(asStream(events), `response.${response.status}`);
  return response;
}

/** The `error` event of WebSocket mode as openai-node reads it: `{type, status, error: {type, code, message, param}}`. */
function expectErrorEvent(event: SocketEvent | undefined, status: number, code: string, param: string | null): void {
  expect(event).toEqual({ type: 'error', status, error: { type: 'invalid_request_error', code, param, message: expect.any(String) as string } });
}

/**
 * The Responses API's WebSocket mode (`GET /v1/responses` upgraded) against the real llama worker,
 * through openai-node's ResponsesWS and the Agents SDK's OpenAIResponsesWSModel: every event is a
 * text frame valid against OpenAI's schema, numbered as over SSE; `previous_response_id` chains
 * on a connection whether or not stored, and across instances when stored.
 */
describe('Responses WebSocket mode', () => {
  const stack = e2eStack();
  const [urlA, urlB] = stack.apiUrls;
  const http = new OpenAI({ baseURL: urlA, apiKey: stack.apiKey, maxRetries: 0 });
  const sockets: ResponsesSocketClient[] = [];
  const connect = (baseURL = urlA): ResponsesSocketClient => {
    const socket = new ResponsesSocketClient(baseURL, stack.apiKey);
    sockets.push(socket);
    return socket;
  };
  afterEach(() => {
    for (const socket of sockets.splice(0)) socket.close();
  });

  const settings = { model: stack.model, max_output_tokens: 24, temperature: 0 };
  const user = (text: string) => [{ role: 'user' as const, content: text }];
  const prompts = ['Say hello.', 'And then?', 'Tell me more.'];

  it('chains three store:false turns on one connection, as the whole conversation over HTTP answers', async () => {
    const socket = connect();
    const responses: OpenAI.Responses.Response[] = [];
    for (const prompt of prompts) {
      const previous = responses.at(-1);
      const events = await socket.turn({ ...settings, store: false, input: user(prompt), ...(previous ? { previous_response_id: previous.id } : {}) });
      const response = expectWellFormedTurn(events);
      expect(response).toMatchObject({ store: false, previous_response_id: previous?.id ?? null });
      responses.push(response);
    }

    // The third turn answered the whole conversation: the same request over HTTP, every item sent, answers the same.
    const history = [...user(prompts[0]), ...responses[0].output, ...user(prompts[1]), ...responses[1].output, ...user(prompts[2])];
    const whole = await http.responses.create({ ...settings, store: false, input: history as OpenAI.Responses.ResponseInput });
    expect(responses[2].usage?.input_tokens).toBe(whole.usage?.input_tokens);
    expect(responses[2].output_text ?? finalText(responses[2])).toBe(whole.output_text);

    // Unstored, it is this connection's alone: neither HTTP nor another connection finds it.
    await expect(http.responses.retrieve(responses[2].id)).rejects.toMatchObject({ status: 404 });
    const other = connect();
    const [refused] = await other.turn({ ...settings, store: false, input: user('Go on.'), previous_response_id: responses[2].id });
    expectErrorEvent(refused, 400, 'previous_response_not_found', 'previous_response_id');
  });

  it('chains store:true turns on one instance and continues them on another after a reconnect', async () => {
    const first = connect(urlA);
    let previous: OpenAI.Responses.Response | undefined;
    for (const prompt of prompts) {
      const events = await first.turn({ ...settings, input: user(prompt), ...(previous ? { previous_response_id: previous.id } : {}) });
      previous = expectWellFormedTurn(events);
      expect(previous).toMatchObject({ store: true });
    }
    first.close();

    const second = connect(urlB);
    const events = await second.turn({ ...settings, input: user('Go on.'), previous_response_id: previous!.id });
    const continued = expectWellFormedTurn(events);
    expect(continued.previous_response_id).toBe(previous!.id);
    // Stored in Redis: instance A reads what B answered, and its input items are this turn's own.
    const retrieved = await http.responses.retrieve(continued.id);
    expect(retrieved).toMatchObject({ status: continued.status, output_text: continued.output_text ?? finalText(continued) });
    const items = await http.responses.inputItems.list(continued.id);
    expect(items.data.map((item) => item.type)).toEqual(['message']);
  });

  it('warms up with generate:false: a response id and no output, which the next turn continues', async () => {
    const socket = connect();
    const warm = await socket.turn({ ...settings, store: false, generate: false, input: user('Say hello.') });
    expectWellFormedStream(asStream(warm));
    const prepared = finalResponse(warm);
    expect(prepared).toMatchObject({ status: 'completed', output: [], usage: { input_tokens: 0, output_tokens: 0 } });

    const events = await socket.turn({ ...settings, store: false, input: user('And then?'), previous_response_id: prepared.id });
    const answered = expectWellFormedTurn(events);
    const whole = await http.responses.create({ ...settings, store: false, input: [...user('Say hello.'), ...user('And then?')] });
    expect(answered.usage?.input_tokens).toBe(whole.usage?.input_tokens);
  });

  it('answers bad frames with an error event and keeps the connection', async () => {
    const socket = connect();
    socket.ws.sendRaw('{"type": "response.create", ');
    expectErrorEvent(await socket.next(), 400, 'invalid_json', null);
    socket.ws.sendRaw(JSON.stringify({ type: 'response.cancel' }));
    expectErrorEvent(await socket.next(), 400, 'unknown_event_type', 'type');
    socket.ws.sendRaw(JSON.stringify({ type: 'response.create', ...settings, input: 'x'.repeat(11 * 1024 * 1024) }));
    expectErrorEvent(await socket.next(), 413, 'request_too_large', null);
    const [unknown] = await socket.turn({ ...settings, input: user('Hi.'), previous_response_id: 'resp_0123456789abcdef' });
    expectErrorEvent(unknown, 400, 'previous_response_not_found', 'previous_response_id');
    const [background] = await socket.turn({ ...settings, input: user('Hi.'), background: true });
    expectErrorEvent(background, 400, 'invalid_value', 'background');
    const [invalid] = await socket.turn({ ...settings, temperature: 7, input: user('Hi.') });
    expectErrorEvent(invalid, 400, 'invalid_value', 'temperature');

    // Codex's acknowledgement of a response is answered with nothing: the next event is the next turn's.
    socket.ws.sendRaw(JSON.stringify({ type: 'response.processed', response_id: 'resp_0123456789abcdef' }));
    expectWellFormedTurn(await socket.turn({ ...settings, input: user('Hi.') }));
  });

  it('refuses a second response.create while one runs and lets the running one finish', async () => {
    const socket = connect();
    socket.ws.send({ type: 'response.create', ...settings, max_output_tokens: 200, input: user('Tell me everything.') } as never);
    socket.ws.send({ type: 'response.create', ...settings, input: user('Hi.') } as never);
    const events = [...(await socket.untilTerminal()), ...(await socket.untilTerminal())];
    const refusals = events.filter((event) => event.type === 'error');
    expect(refusals).toHaveLength(1);
    expectErrorEvent(refusals[0], 400, 'response_in_progress', null);
    const running = events.filter((event) => event.type !== 'error');
    expectWellFormedTurn(running);
  });

  it('runs stream_id lanes side by side on one connection, each first in first out (openai-node ResponsesWebSocketSession)', async () => {
    const socket = connect();
    await socket.opened();
    const session = new ResponsesWebSocketSession(socket.ws, { maxLanes: 4, maxBufferedEvents: 100_000, maxBufferedBytes: 64 * 2 ** 20 });
    const [long, short] = [session.lane('long'), session.lane('short')];
    try {
      long.create({ ...settings, max_output_tokens: 1000, input: user('Tell me everything.') });
      long.create({ ...settings, input: user('And then?') });
      short.create({ ...settings, max_output_tokens: 16, input: user('Say hello.') });
      const [first, quick] = await Promise.all([long.finalResponse(), short.finalResponse()]);
      const second = await long.finalResponse();
      for (const response of [first, quick, second]) expect(response.status).toMatch(/^(completed|incomplete)$/);
      expect(first.usage?.output_tokens).toBeGreaterThan(100);

      // Every event carries its lane; each lane's responses are well-formed streams, one after the other.
      const events = socket.drain();
      const laneOf = (lane: string) => events.filter((event) => (event as { stream_id?: string }).stream_id === lane);
      expect(laneOf('long').length + laneOf('short').length).toBe(events.length);
      const terminal = (event: SocketEvent): boolean => event.type === 'response.completed' || event.type === 'response.incomplete';
      const longEvents = laneOf('long');
      const split = longEvents.findIndex(terminal) + 1;
      expect(expectWellFormedTurn(longEvents.slice(0, split)).id).toBe(first.id);
      expect(expectWellFormedTurn(longEvents.slice(split)).id).toBe(second.id);
      expect(expectWellFormedTurn(laneOf('short')).id).toBe(quick.id);
      // The short lane did not wait for the long one: it ended while the long lane's first answer ran.
      const ended = (id: string) => events.findIndex((event) => terminal(event) && (event as { response?: { id: string } }).response?.id === id);
      expect(ended(quick.id)).toBeLessThan(ended(first.id));
    } finally {
      session.close();
    }
  });

  it('answers response.steer with response.steer.failed: steering_not_supported, the input given back', async () => {
    const socket = connect();
    socket.ws.send({ type: 'response.steer', previous_response_id: 'resp_0123456789abcdef', input: 'Shorter, please.' });
    expect(await socket.next()).toMatchObject({
      type: 'response.steer.failed',
      steer: { previous_response_id: 'resp_0123456789abcdef', input: 'Shorter, please.' },
      error: { type: 'invalid_request_error', code: 'steering_not_supported' },
    });
    expectWellFormedTurn(await socket.turn({ ...settings, input: user('Hi.') }));
  });

  it('evicts the cached response when a continuation of it fails (store:false)', async () => {
    const socket = connect();
    const first = finalResponse(await socket.turn({ ...settings, store: false, input: user('Say hello.') }));
    const [failed] = await socket.turn({ ...settings, store: false, temperature: 7, input: user('And then?'), previous_response_id: first.id });
    expectErrorEvent(failed, 400, 'invalid_value', 'temperature');
    const [gone] = await socket.turn({ ...settings, store: false, input: user('And then?'), previous_response_id: first.id });
    expectErrorEvent(gone, 400, 'previous_response_not_found', 'previous_response_id');
  });

  it('runs an Agents SDK agent with a zod function tool over OpenAIResponsesWSModel', async () => {
    setTracingDisabled(true); // tracing would export to OpenAI's servers
    const model = new OpenAIResponsesWSModel(new OpenAI({ baseURL: urlA, apiKey: stack.apiKey, maxRetries: 0 }), stack.model);
    const cities: string[] = [];
    const weather = agentTool({
      name: 'get_weather',
      description: 'The weather in a city',
      parameters: z.object({ city: z.string() }),
      execute: ({ city }) => {
        cities.push(city);
        return `The sky over ${city} is clear.`;
      },
    });
    // As in responses-agents.e2e-spec.ts: the SDK drops tool_choice once the tool has run, and a sampled answer ends by itself.
    const agent = new Agent({
      name: 'Forecaster',
      instructions: 'Answer with the weather.',
      model,
      tools: [weather],
      modelSettings: { toolChoice: 'required', parallelToolCalls: false, maxTokens: 2000 },
    });
    try {
      const result = await run(agent, 'What is the weather in Lisbon?', { maxTurns: 4 });
      expect(cities).toHaveLength(1);
      expect(result.finalOutput).toMatch(/[a-z]{2,}/);
      expect(result.newItems.map((item) => item.type)).toEqual(['tool_call_item', 'tool_call_output_item', 'message_output_item']);
    } finally {
      await model.close();
    }
  });
});

/** The text of a Response's messages (the event's object has no `output_text` helper). */
function finalText(response: OpenAI.Responses.Response): string {
  return response.output
    .flatMap((item) => (item.type === 'message' ? item.content : []))
    .map((part) => (part.type === 'output_text' ? part.text : ''))
    .join('');
}
