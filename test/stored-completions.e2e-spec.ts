import OpenAI from 'openai';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import { randomInt } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertMatchesSchema } from './support/openai-schema';
import { STACK_API_KEY, STACK_MODEL, ServiceStack, waitFor } from './support/service-stack';
import { SseReader } from './support/sse';
import type { SseFrame } from './support/sse';

const OTHER_KEY = 'sk-another-tenant-0123456789';
const SLOW_MODEL = 'slow-synthetic';
const SLOW_TOKENS = 300;

/** The text of choice 0 that a list of stream frames carries, and the frames' ids in order. */
function textOf(frames: SseFrame[]): string {
  return frames
    .filter((frame) => frame.data !== '[DONE]')
    .map((frame) => (JSON.parse(frame.data) as ChatCompletionChunk).choices[0]?.delta.content ?? '')
    .join('');
}

/** Frames of one stream, told in two parts: ids 0, 1, 2, … with nothing repeated or missing, then [DONE]. */
function expectWholeStream(frames: SseFrame[]): void {
  expect(frames.at(-1)?.data).toBe('[DONE]');
  const ids = frames.slice(0, -1).map((frame) => Number(frame.id));
  expect(ids).toEqual(ids.map((_, index) => index));
  for (const frame of frames.slice(0, -1)) assertMatchesSchema('CreateChatCompletionStreamResponse', JSON.parse(frame.data));
}

/**
 * Stored completions (`store: true`) through the official client, and resumable streams over
 * raw HTTP: a stream cut at random points and resumed, on the same or another API instance or
 * after its instance was SIGKILLed, reassembles to exactly the answer of an identical request.
 */
describe('stored completions and resumable streams', () => {
  let stack: ServiceStack;
  let secondApi: string;
  let client: OpenAI;
  let stranger: OpenAI;

  beforeAll(async () => {
    stack = await ServiceStack.start({
      name: 'stored',
      apiKeys: [STACK_API_KEY, OTHER_KEY],
      models: [STACK_MODEL, SLOW_MODEL],
      apiEnv: { RESUME_GRACE_MS: '1500' },
    });
    await stack.addWorker({ ENGINE: 'synthetic', SYNTHETIC_TOKENS: String(SLOW_TOKENS), SYNTHETIC_TOKEN_INTERVAL_MS: '10', SYNTHETIC_SLOTS: '4' }, SLOW_MODEL);
    secondApi = (await stack.addApi()).baseUrl;
    client = new OpenAI({ baseURL: stack.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
    stranger = new OpenAI({ baseURL: stack.baseUrl, apiKey: OTHER_KEY, maxRetries: 0 });
  }, 60_000);

  afterAll(async () => {
    await stack?.stop();
  });

  const question = (maxTokens: number, seed: number) => ({
    model: STACK_MODEL,
    messages: [
      { role: 'system' as const, content: 'You tell stories.' },
      { role: 'user' as const, content: [{ type: 'text' as const, text: 'Tell me about the fox.' }] },
    ],
    max_tokens: maxTokens,
    seed,
  });

  it('stores an answer: retrieve, list with filters, messages, update metadata, delete; other keys see nothing', async () => {
    const created = await client.chat.completions.create({ ...question(20, 1), store: true, metadata: { topic: 'fox', run: 'a' } });
    const retrieved = await client.chat.completions.retrieve(created.id);
    assertMatchesSchema('CreateChatCompletionResponse', retrieved);
    expect(retrieved).toMatchObject({ id: created.id, created: created.created, model: created.model, choices: created.choices, usage: created.usage });
    expect(retrieved.metadata).toEqual({ topic: 'fox', run: 'a' });

    const unstored = await client.chat.completions.create(question(5, 2));
    await expect(client.chat.completions.retrieve(unstored.id)).rejects.toMatchObject({ status: 404 });

    const other = await client.chat.completions.create({ ...question(5, 3), store: true, metadata: { topic: 'owl' } });
    const listed = [];
    for await (const item of client.chat.completions.list({ metadata: { topic: 'fox' }, limit: 1 })) listed.push(item.id);
    expect(listed).toEqual([created.id]);
    const newestFirst = await client.chat.completions.list({ order: 'desc', model: STACK_MODEL });
    expect(newestFirst.data.map((item) => item.id).slice(0, 2)).toEqual([other.id, created.id]);

    const messages = await client.chat.completions.messages.list(created.id);
    expect(messages.data.map(({ role, content }) => ({ role, content }))).toEqual([
      { role: 'system', content: 'You tell stories.' },
      { role: 'user', content: 'Tell me about the fox.' },
    ]);
    expect(messages.data[1].content_parts).toEqual([{ type: 'text', text: 'Tell me about the fox.' }]);
    expect(new Set(messages.data.map((message) => message.id)).size).toBe(2);

    const updated = await client.chat.completions.update(created.id, { metadata: { topic: 'hen' } });
    expect(updated.metadata).toEqual({ topic: 'hen' });
    expect((await client.chat.completions.retrieve(created.id)).metadata).toEqual({ topic: 'hen' });

    await expect(stranger.chat.completions.retrieve(created.id)).rejects.toMatchObject({ status: 404 });
    await expect(stranger.chat.completions.update(created.id, { metadata: {} })).rejects.toMatchObject({ status: 404 });
    await expect(stranger.chat.completions.delete(created.id)).rejects.toMatchObject({ status: 404 });
    expect((await stranger.chat.completions.list()).data).toEqual([]);
    const resumedByStranger = await fetch(`${stack.baseUrl}/chat/completions/${created.id}?stream=true`, { headers: { authorization: `Bearer ${OTHER_KEY}` } });
    expect(resumedByStranger.status).toBe(404);

    expect(await client.chat.completions.delete(created.id)).toEqual({ id: created.id, object: 'chat.completion.deleted', deleted: true });
    await expect(client.chat.completions.retrieve(created.id)).rejects.toMatchObject({ status: 404 });
  });

  it('stores a streamed answer like a whole one', async () => {
    const reference = await client.chat.completions.create(question(24, 5));
    const stream = client.chat.completions.stream({ ...question(24, 5), store: true });
    const streamed = await stream.finalChatCompletion();
    expect(streamed.choices[0].message.content).toBe(reference.choices[0].message.content);
    const stored = await waitFor('the stored answer', () => client.chat.completions.retrieve(streamed.id));
    expect(stored.choices[0].message.content).toBe(reference.choices[0].message.content);
  });

  it('resumes a stream cut at random points, on the same and on another instance, to exactly the whole answer', async () => {
    const body = { ...question(400, 9), stream: true };
    const reference = (await client.chat.completions.create({ ...question(400, 9) })).choices[0].message.content;
    for (const [round, resumeOn] of [stack.baseUrl, secondApi, secondApi, stack.baseUrl].entries()) {
      const first = await SseReader.open(`${stack.baseUrl}/chat/completions`, STACK_API_KEY, { body: { ...body, store: true } });
      const cutAfter = round === 0 ? 1 : randomInt(2, 12);
      const before: SseFrame[] = [];
      // A cut after the last event but before [DONE] is a cut too.
      for (let frame = await first.next(); frame && frame.data !== '[DONE]' && before.length < cutAfter; frame = await first.next()) before.push(frame);
      first.cut();
      const { id } = JSON.parse(before[0].data) as ChatCompletionChunk;
      // Half the rounds name the last event in the standard header, half in the query.
      const lastId = before.at(-1)?.id ?? '';
      const url = `${resumeOn}/chat/completions/${id}?stream=true${round % 2 === 1 ? `&starting_after=${lastId}` : ''}`;
      const resumed = await SseReader.open(url, STACK_API_KEY, { headers: round % 2 === 1 ? {} : { 'last-event-id': lastId } });
      if (resumed.response.status !== 200) throw new Error(`resume answered ${resumed.response.status}: ${await resumed.response.text()}`);
      expect(resumed.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const after = await resumed.rest();
      expectWholeStream([...before, ...after]);
      expect(textOf([...before, ...after])).toBe(reference);
    }
  });

  it('resumes on another instance after the one streaming was SIGKILLed', async () => {
    const doomed = await stack.addApi();
    const body = { ...question(1000, 13), stream: true, store: true };
    const reference = (await client.chat.completions.create({ ...question(1000, 13) })).choices[0].message.content;
    const first = await SseReader.open(`${doomed.baseUrl}/chat/completions`, STACK_API_KEY, { body });
    const before: SseFrame[] = [];
    for (let frame = await first.next(); frame && before.length < 3; frame = await first.next()) before.push(frame);
    await doomed.process.stop('SIGKILL');
    await first.rest().catch(() => undefined); // the connection dies with the instance
    const { id } = JSON.parse(before[0].data) as ChatCompletionChunk;
    const resumed = await SseReader.open(`${secondApi}/chat/completions/${id}?stream=true`, STACK_API_KEY, {
      headers: { 'last-event-id': before.at(-1)?.id ?? '' },
    });
    const after = await resumed.rest();
    expectWholeStream([...before, ...after]);
    expect(textOf([...before, ...after])).toBe(reference);
  });

  it('keeps generating through a resume within the grace period, and cancels without one', async () => {
    const body = { model: SLOW_MODEL, messages: [{ role: 'user', content: 'go' }], stream: true, store: true };
    const followed = await SseReader.open(`${stack.baseUrl}/chat/completions`, STACK_API_KEY, { body });
    const before = [(await followed.next())!, (await followed.next())!];
    followed.cut();
    await sleep(700); // within the 1.5 s grace
    const { id } = JSON.parse(before[0].data) as ChatCompletionChunk;
    const after = await (
      await SseReader.open(`${secondApi}/chat/completions/${id}?stream=true`, STACK_API_KEY, { headers: { 'last-event-id': before[1].id ?? '' } })
    ).rest();
    expectWholeStream([...before, ...after]);
    const last = JSON.parse(after.at(-2)!.data) as ChatCompletionChunk;
    expect(last.choices[0].finish_reason).toBe('stop');
    expect(textOf([...before, ...after]).split(' ')).toHaveLength(SLOW_TOKENS);

    const abandoned = await SseReader.open(`${stack.baseUrl}/chat/completions`, STACK_API_KEY, { body });
    const frame = await abandoned.next();
    abandoned.cut();
    const leftAt = Date.now();
    const abandonedId = (JSON.parse(frame!.data) as ChatCompletionChunk).id;
    const queue = stack.queue(SLOW_MODEL);
    const failed = await waitFor('the abandoned job to be cancelled', async () => (await queue.getJobState(abandonedId)) === 'failed', 8000);
    expect(failed).toBe(true);
    const job = await queue.getJob(abandonedId);
    expect(job?.failedReason).toMatch(/cancel/i);
    // Not before the grace period: the lease lives 1.5 s from its last renewal (renewed every
    // 0.5 s while the client was there), so at least 1 s after the client left.
    expect((job?.finishedOn ?? 0) - leftAt).toBeGreaterThanOrEqual(900);
  });

  it('lists past a cursor whose completion was deleted: a loop that deletes what it lists deletes all', async () => {
    // The other key's list holds only these, whatever the other tests store.
    const created: string[] = [];
    for (let seed = 0; seed < 3; seed++) created.push((await stranger.chat.completions.create({ ...question(2, seed), store: true })).id);
    const deleted: string[] = [];
    for await (const completion of stranger.chat.completions.list({ limit: 1, order: 'asc' })) {
      await stranger.chat.completions.delete(completion.id);
      deleted.push(completion.id);
    }
    expect(deleted.toSorted()).toEqual(created.toSorted());
    expect((await stranger.chat.completions.list()).data).toEqual([]);
  });

  it('finishes and stores a background answer whose client left', async () => {
    const controller = new AbortController();
    const request = client.chat.completions.create(
      { model: SLOW_MODEL, messages: [{ role: 'user', content: 'go' }], store: true },
      { signal: controller.signal },
    );
    request.catch(() => undefined);
    const queue = stack.queue(SLOW_MODEL);
    const [job] = await waitFor('the background job to start', async () => {
      const active = await queue.getJobs(['active']);
      return active.length > 0 ? active : undefined;
    });
    controller.abort();
    const id = String(job.id);
    await expect(client.chat.completions.retrieve(id)).rejects.toMatchObject({ status: 409 });
    // An update while it is generated is refused and changes nothing.
    await expect(client.chat.completions.update(id, { metadata: { topic: 'late' } })).rejects.toMatchObject({ status: 409 });
    const stored = await waitFor('the background answer', () => client.chat.completions.retrieve(id), 10_000);
    expect(stored.metadata ?? {}).toEqual({});
    expect(stored.choices[0].finish_reason).toBe('stop');
    expect(stored.choices[0].message.content?.split(' ')).toHaveLength(SLOW_TOKENS);
  });
});

describe('stored completions past their time', () => {
  let stack: ServiceStack;

  beforeAll(async () => {
    stack = await ServiceStack.start({ name: 'stored-expiry', apiEnv: { STORE_TTL_SECONDS: '1', RESUME_WINDOW_SECONDS: '1' } });
  }, 60_000);

  afterAll(async () => {
    await stack?.stop();
  });

  it('answers 404 for an expired id, its messages and its stream, and lists nothing; a malformed resume point is a 400', async () => {
    const client = new OpenAI({ baseURL: stack.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
    const created = await client.chat.completions.create({ model: STACK_MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4, store: true });
    expect((await client.chat.completions.retrieve(created.id)).id).toBe(created.id);
    const resume = (id: string, lastEventId: string) =>
      fetch(`${stack.baseUrl}/chat/completions/${id}?stream=true`, { headers: { authorization: `Bearer ${STACK_API_KEY}`, 'last-event-id': lastEventId } });
    expect((await resume(created.id, 'seven')).status).toBe(400);
    await sleep(1500);
    await expect(client.chat.completions.retrieve(created.id)).rejects.toMatchObject({ status: 404 });
    await expect(client.chat.completions.messages.list(created.id)).rejects.toMatchObject({ status: 404 });
    expect((await resume(created.id, '0')).status).toBe(404);
    expect((await resume('chatcmpl-never-made', '0')).status).toBe(404);
    expect((await client.chat.completions.list()).data).toEqual([]);
  });
});
