import { Agent, MemorySession, OpenAIResponsesCompactionSession, run, setDefaultOpenAIClient, setTracingDisabled } from '@openai/agents';
import OpenAI from 'openai';
import { resolve } from 'node:path';
import type { RunningApi } from '../tools/local-stack/services';
import { REPO_ROOT, startApi } from '../tools/local-stack/services';
import { assertMatchesResponseEvent, assertMatchesResponsesSchema } from './support/openai-responses-schema';
import { ServiceStack, STACK_API_KEY } from './support/service-stack';
import { e2eStack } from './support/stack-env';

/** The Agents SDK compacts only with a model named as OpenAI's are: tiny-chat served under such a name. */
const MODEL = 'gpt-tiny-chat';
const OLD_SECRET = 'compaction-secret-old-0123456789abcdef';
const NEW_SECRET = 'compaction-secret-new-0123456789abcdef';
const OTHER_KEY = 'sk-compaction-other-key-0123456789';
/** OpenAI's least `compact_threshold`. */
const THRESHOLD = 1000;
const COMPACTING = [{ type: 'compaction', compact_threshold: THRESHOLD }];
const LOG_LINE = 'the rabbit ran down the hole and the queen was cross with the hatter. ';

/**
 * `POST /v1/responses/compact` on the real llama worker: a summarising turn on the queue, answered
 * with the last user messages and one sealed `compaction` item that a later request sends back
 * (openai-node's `responses.compact`, the Agents SDK's OpenAIResponsesCompactionSession). The seal
 * opens on another instance that holds the secret (rotation: a new one first, the old one after),
 * and refuses an altered item or another key's.
 */
describe('Responses: compaction', () => {
  let stack: ServiceStack;
  let rotated: RunningApi;
  let client: OpenAI;

  beforeAll(async () => {
    stack = await ServiceStack.start({
      name: 'compaction',
      workers: 0,
      models: [MODEL],
      apiKeys: [STACK_API_KEY, OTHER_KEY],
      apiEnv: { COMPACTION_KEYS: OLD_SECRET },
    });
    await stack.addWorker({ MODEL_PATH: resolve(REPO_ROOT, 'models/tiny-chat.gguf') }, MODEL);
    rotated = await startApi({
      redisUrl: stack.redis.url,
      apiKeys: [STACK_API_KEY, OTHER_KEY],
      models: [MODEL],
      env: { COMPACTION_KEYS: `${NEW_SECRET},${OLD_SECRET}` },
      logFile: resolve(REPO_ROOT, 'test-artifacts/logs/compaction-api-rotated.log'),
    });
    client = new OpenAI({ baseURL: stack.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
  }, 120_000);

  afterAll(async () => {
    await rotated?.process.stop();
    await stack?.stop();
  });

  const conversation: OpenAI.Responses.ResponseInputItem[] = [
    { role: 'user', content: 'My name is Ada and I am planning a trip to Lisbon.' },
    { role: 'assistant', content: 'Lisbon is lovely in spring.' },
    { role: 'user', content: 'Book the hotel near the river.' },
  ];

  it('answers the kept user messages and a sealed compaction item that a later request reads', async () => {
    const compacted = await client.responses.compact({ model: MODEL, input: conversation });
    assertMatchesResponsesSchema('CompactResource', compacted);
    expect(compacted.object).toBe('response.compaction');
    expect(compacted.usage.input_tokens).toBeGreaterThan(0);
    const [first, second, item] = compacted.output as unknown as Array<Record<string, unknown>>;
    expect(compacted.output).toHaveLength(3);
    expect([first.role, second.role]).toEqual(['user', 'user']);
    expect(item).toMatchObject({ type: 'compaction', id: expect.stringMatching(/^cmp_/) as string });
    const sealed = item.encrypted_content as string;
    // Sealed: none of the conversation reads through.
    expect(sealed).toMatch(/^cmp1\./);
    expect(Buffer.from(sealed.split('.')[3], 'base64url').toString('latin1')).not.toMatch(/Summary|Lisbon/);

    // The compacted history goes on, on this instance and on one with the secret rotated.
    const next = [...(compacted.output as unknown as OpenAI.Responses.ResponseInputItem[]), { role: 'user' as const, content: 'And the flight?' }];
    for (const baseURL of [stack.baseUrl, rotated.baseUrl]) {
      const answer = await new OpenAI({ baseURL, apiKey: STACK_API_KEY, maxRetries: 0 }).responses.create({ model: MODEL, input: next, max_output_tokens: 16 });
      assertMatchesResponsesSchema('Response', answer);
      // The summary takes the item's place in the prompt: more tokens than the messages alone.
      const bare = await client.responses.create({ model: MODEL, input: next.filter((entry) => entry.type !== 'compaction'), max_output_tokens: 16 });
      expect(answer.usage?.input_tokens).toBeGreaterThan(bare.usage?.input_tokens ?? Infinity);
    }
    const items = await client.responses.create({ model: MODEL, input: next, max_output_tokens: 16 });
    const listed = await client.responses.inputItems.list(items.id, { order: 'asc' });
    // Listed as sent: the summary itself never leaves the service.
    expect(listed.data.map((entry) => entry.type)).toEqual(['message', 'message', 'compaction', 'message']);
  });

  it('seals with a key generated once and kept in Redis when the operator names none, shared by every instance', async () => {
    const shared = e2eStack();
    const [first, ...others] = shared.apiUrls.map((baseURL) => new OpenAI({ baseURL, apiKey: shared.apiKey, maxRetries: 0 }));
    const compacted = await first.responses.compact({ model: shared.model, input: 'Remember the colour blue.' });
    const next = [...(compacted.output as unknown as OpenAI.Responses.ResponseInputItem[]), { role: 'user' as const, content: 'Which colour?' }];
    for (const apiClient of [first, ...others]) {
      await expect(apiClient.responses.create({ model: shared.model, input: next, max_output_tokens: 16 })).resolves.toMatchObject({ object: 'response' });
    }
    // This stack's secret is another: what it sealed does not open here.
    await expect(client.responses.create({ model: MODEL, input: next })).rejects.toMatchObject({ status: 400, code: 'invalid_encrypted_content' });
  });

  it('compacts the chain a previous_response_id names', async () => {
    const earlier = await client.responses.create({ model: MODEL, input: conversation, max_output_tokens: 16 });
    const compacted = await client.responses.compact({ model: MODEL, previous_response_id: earlier.id, input: 'One more thing.' });
    assertMatchesResponsesSchema('CompactResource', compacted);
    expect(compacted.output.map((entry) => entry.type)).toEqual(['message', 'message', 'message', 'compaction']);
  });

  it('refuses an altered item, another key’s, and one sealed with a secret no longer kept', async () => {
    const compacted = await client.responses.compact({ model: MODEL, input: 'Remember the number 42.' });
    const item = compacted.output.at(-1) as unknown as { type: 'compaction'; encrypted_content: string };
    const parts = item.encrypted_content.split('.');
    const body = Buffer.from(parts[3], 'base64url');
    body[0] ^= 1;
    const altered = { ...item, encrypted_content: [...parts.slice(0, 3), body.toString('base64url')].join('.') };
    const send = (apiClient: OpenAI, compaction: unknown) =>
      apiClient.responses.create({ model: MODEL, input: [compaction as OpenAI.Responses.ResponseInputItem, { role: 'user', content: 'Which number?' }] });
    await expect(send(client, altered)).rejects.toMatchObject({ status: 400, code: 'invalid_encrypted_content', param: 'input[0].encrypted_content' });
    await expect(send(new OpenAI({ baseURL: stack.baseUrl, apiKey: OTHER_KEY, maxRetries: 0 }), item)).rejects.toMatchObject({
      status: 400,
      code: 'invalid_encrypted_content',
    });
    // Sealed by the rotated instance with the new secret: the first instance, which never had it, refuses it.
    const rotatedClient = new OpenAI({ baseURL: rotated.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
    const sealedNew = (await rotatedClient.responses.compact({ model: MODEL, input: 'Remember 7.' })).output.at(-1);
    await expect(send(rotatedClient, sealedNew)).resolves.toMatchObject({ object: 'response' });
    await expect(send(client, sealedNew)).rejects.toMatchObject({ status: 400, code: 'invalid_encrypted_content' });
    // And the body is checked as OpenAI's is.
    await expect(client.post('/responses/compact', { body: { model: MODEL, input: 'x', temperature: 1 } })).rejects.toMatchObject({ status: 400 });
    await expect(client.post('/responses/compact', { body: { input: 'x' } })).rejects.toMatchObject({ status: 400, param: 'model' });
    await expect(client.post('/responses/compact', { body: { model: MODEL, input: 42 } })).rejects.toMatchObject({ status: 400, param: 'input' });
  });

  it("compacts an Agents SDK session's history with OpenAIResponsesCompactionSession, and the session goes on", async () => {
    setTracingDisabled(true);
    setDefaultOpenAIClient(client);
    const session = new OpenAIResponsesCompactionSession({ client, model: MODEL, underlyingSession: new MemorySession(), compactionMode: 'input' });
    // The SDK fails a run on an incomplete response: the answer must end by itself (sampled, within a few dozen words).
    const agent = new Agent({ name: 'planner', instructions: 'You help plan trips.', model: MODEL, modelSettings: { maxTokens: 2000 } });
    await run(agent, 'Plan a day in Lisbon.', { session });
    await run(agent, 'And the evening?', { session });
    const compacted = await session.runCompaction({ force: true });
    expect(compacted?.usage.inputTokens).toBeGreaterThan(0);
    const items = (await session.getItems()) as Array<{ type?: string; role?: string }>;
    expect(items.map((entry) => entry.type ?? entry.role)).toEqual(['message', 'message', 'compaction']);
    // The next turn sends the compaction item back (the SDK sends what follows the last one) and is answered.
    const third = await run(agent, 'And the next day?', { session });
    expect(third.lastResponseId).toMatch(/^resp_/);
    const sent = await client.responses.inputItems.list(third.lastResponseId as string, { order: 'asc' });
    expect(sent.data.map((entry) => entry.type)).toEqual(['compaction', 'message']);
  });
  /** A tool's output long enough that the conversation renders past the threshold, as the service itself counts it. */
  async function longToolTurn(): Promise<{ input: OpenAI.Responses.ResponseInputItem[]; tokens: number }> {
    for (let lines = 16; lines <= 1024; lines *= 2) {
      const input: OpenAI.Responses.ResponseInputItem[] = [
        { role: 'user', content: 'Why does the build fail?' },
        { type: 'function_call', call_id: 'call_log', name: 'read_log', arguments: '{}' },
        { type: 'function_call_output', call_id: 'call_log', output: LOG_LINE.repeat(lines) },
      ];
      const { input_tokens: tokens } = await client.responses.inputTokens.count({ model: MODEL, input });
      if (tokens >= THRESHOLD * 1.2) return { input, tokens };
    }
    throw new Error('no tool output of up to 1024 lines rendered past the threshold');
  }

  it("compacts on the server once the prompt reaches context_management's threshold, and the chain goes on from the summary", async () => {
    const { input, tokens } = await longToolTurn();
    const answer = await client.responses.create({ model: MODEL, input, context_management: COMPACTING, max_output_tokens: 16 });
    assertMatchesResponsesSchema('Response', answer);
    const [compaction, ...answered] = answer.output;
    expect(compaction).toMatchObject({
      type: 'compaction',
      id: expect.stringMatching(/^cmp_/) as string,
      encrypted_content: expect.stringMatching(/^cmp1\./) as string,
    });
    expect(answered.length).toBeGreaterThan(0);
    // The answer read the summary and the kept user message, not the tool's output.
    expect(answer.usage?.input_tokens).toBeLessThan(tokens);

    // Chained by previous_response_id, or statelessly with the whole history, or with only what follows the item: the same prompt.
    const next = { role: 'user' as const, content: 'And now?' };
    const chained = await client.responses.create({ model: MODEL, previous_response_id: answer.id, input: [next], max_output_tokens: 16 });
    const output = answer.output as unknown as OpenAI.Responses.ResponseInputItem[];
    const stateless = await client.responses.create({ model: MODEL, input: [...input, ...output, next], max_output_tokens: 16 });
    const pruned = await client.responses.create({ model: MODEL, input: [...output, next], max_output_tokens: 16 });
    expect(chained.usage?.input_tokens).toBeLessThan(tokens);
    expect([stateless.usage?.input_tokens, pruned.usage?.input_tokens]).toEqual([chained.usage?.input_tokens, chained.usage?.input_tokens]);

    // Below the threshold nothing is compacted.
    const short = await client.responses.create({ model: MODEL, input: 'Hello', context_management: COMPACTING, max_output_tokens: 16 });
    expect(short.output.map((item) => item.type)).not.toContain('compaction');
  });

  it('streams the compaction item first, at output index 0, and keeps it in the stored and the background response', async () => {
    const { input } = await longToolTurn();
    const stream = await client.responses.create({ model: MODEL, input, context_management: COMPACTING, max_output_tokens: 16, stream: true });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) {
      assertMatchesResponseEvent(event);
      events.push(event);
    }
    const added = events.filter((event) => event.type === 'response.output_item.added');
    expect(added[0]).toMatchObject({ output_index: 0, item: { type: 'compaction' } });
    expect(added[1]).toMatchObject({ output_index: 1 });
    const last = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent;
    expect(last.response.output[0]).toEqual(added[0].item);
    const stored = await client.responses.retrieve(last.response.id);
    expect(stored.output[0]).toEqual(added[0].item);

    const queued = await client.responses.create({ model: MODEL, input, context_management: COMPACTING, max_output_tokens: 16, background: true });
    let polled = queued;
    for (let tries = 0; tries < 120 && (polled.status === 'queued' || polled.status === 'in_progress'); tries += 1) {
      await new Promise((done) => setTimeout(done, 250));
      polled = await client.responses.retrieve(queued.id);
    }
    expect(polled.status).toMatch(/^(completed|incomplete)$/);
    expect(polled.output[0]).toMatchObject({ type: 'compaction' });
    expect(polled.output.length).toBeGreaterThan(1);
  });

  it("compacts an Agents SDK run's history on the server (modelSettings.contextManagement), and the session goes on", async () => {
    setTracingDisabled(true);
    setDefaultOpenAIClient(client);
    const { input, tokens } = await longToolTurn();
    const log = (input[2] as { output: string }).output;
    // The same turn as the Agents SDK keeps it (its own item shapes).
    const session = new MemorySession();
    await session.addItems([
      { role: 'user', content: 'Why does the build fail?' },
      { type: 'function_call', callId: 'call_log', name: 'read_log', arguments: '{}', status: 'completed' },
      { type: 'function_call_result', callId: 'call_log', name: 'read_log', status: 'completed', output: { type: 'text', text: log } },
    ]);
    const agent = new Agent({
      name: 'builder',
      instructions: 'You fix builds.',
      model: MODEL,
      modelSettings: { maxTokens: 2000, contextManagement: [{ type: 'compaction', compactThreshold: THRESHOLD }] },
    });
    const first = await run(agent, 'What is wrong?', { session });
    expect(first.newItems.map((item) => item.type)).toContain('compaction_item');
    const items = (await session.getItems()) as Array<{ type?: string }>;
    expect(items.map((item) => item.type)).toContain('compaction');
    const second = await run(agent, 'And the fix?', { session });
    expect(second.rawResponses.at(-1)?.usage.inputTokens).toBeLessThan(tokens);
  });

  it('compacts on a final compaction_trigger: the compaction is the whole response, and the chain goes on from it', async () => {
    const trigger: OpenAI.Responses.ResponseInputItem = { type: 'compaction_trigger' };
    const compacted = await client.responses.create({ model: MODEL, input: [...conversation, trigger] });
    assertMatchesResponsesSchema('Response', compacted);
    expect(compacted.status).toBe('completed');
    expect(compacted.output).toHaveLength(1);
    expect(compacted.output[0]).toMatchObject({ type: 'compaction', encrypted_content: expect.stringMatching(/^cmp1\./) as string });
    // What it cost: the summarising pass over the conversation.
    expect(compacted.usage?.input_tokens).toBeGreaterThan(20);
    expect(compacted.usage?.output_tokens).toBeGreaterThan(0);

    // Chained by previous_response_id, the next turn reads the compaction as a stateless request with only the item does.
    const next = { role: 'user' as const, content: 'Which hotel?' };
    const chained = await client.responses.create({ model: MODEL, previous_response_id: compacted.id, input: [next], max_output_tokens: 16 });
    const output = compacted.output as unknown as OpenAI.Responses.ResponseInputItem[];
    const pruned = await client.responses.create({ model: MODEL, input: [...output, next], max_output_tokens: 16 });
    expect(chained.usage?.input_tokens).toBe(pruned.usage?.input_tokens);
    expect((await client.responses.retrieve(compacted.id)).output).toEqual(compacted.output);

    // Streamed: the response's events, the compaction item the only output item.
    const stream = await client.responses.create({ model: MODEL, input: [...conversation, trigger], stream: true });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) {
      assertMatchesResponseEvent(event);
      events.push(event);
    }
    expect(events.map((event) => event.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events[2]).toMatchObject({ output_index: 0, item: { type: 'compaction' } });

    // Anywhere but last it is refused, naming it.
    await expect(client.responses.create({ model: MODEL, input: [trigger, ...conversation] })).rejects.toMatchObject({ status: 400, param: 'input[0].type' });
  });

  it('refuses a context_management entry OpenAI refuses, naming it', async () => {
    const create = (entry: unknown) => client.post('/responses', { body: { model: MODEL, input: 'x', context_management: [entry] } });
    await expect(create({ type: 'truncation' })).rejects.toMatchObject({ status: 400, param: 'context_management[0].type' });
    await expect(create({ type: 'compaction', compact_threshold: 10 })).rejects.toMatchObject({
      status: 400,
      param: 'context_management[0].compact_threshold',
    });
  });
});
