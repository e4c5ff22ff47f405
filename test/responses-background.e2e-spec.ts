import OpenAI from 'openai';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { assertMatchesResponseEvent, assertMatchesResponsesSchema } from './support/openai-responses-schema';
import type { ResponseEvent } from './support/response-events';
import { expectWellFormedStream } from './support/response-events';
import { STACK_API_KEY, STACK_MODEL, ServiceStack, waitFor } from './support/service-stack';
import { SseReader } from './support/sse';
import type { SseFrame } from './support/sse';

const ENDED = new Set(['completed', 'incomplete', 'failed', 'cancelled']);

/** A request long enough to be caught mid-run (the generated model writes thousands of tokens a second). */
const LONG = { model: STACK_MODEL, input: 'Tell me everything.', temperature: 0, max_output_tokens: 4000 };

/** Frames of a Responses stream as the test support's events, checking that each frame's id is its sequence number. */
function eventsOf(frames: SseFrame[]): ResponseEvent[] {
  return frames.map((frame) => {
    const data = JSON.parse(frame.data) as ResponseEvent['data'];
    expect(frame.event).toBe(data.type);
    expect(frame.id).toBe(String(data.sequence_number));
    return { id: frame.id, event: frame.event ?? '', data };
  });
}

const textOf = (events: Array<{ type: string; delta?: unknown }>): string =>
  events
    .filter((event) => event.type === 'response.output_text.delta')
    .map((event) => event.delta as string)
    .join('');

/**
 * Background responses (`background: true`) against the real llama worker, through the official
 * client: queued at once, polled, cancelled, their event stream replayed from any point on any
 * instance, and finished and recorded even when the instance that created them is SIGKILLed.
 */
describe('Responses API: background, cancel and resumed streams', () => {
  let stack: ServiceStack;
  let client: OpenAI;
  let elsewhere: OpenAI;
  let secondApi: string;

  beforeAll(async () => {
    stack = await ServiceStack.start({ name: 'responses-background', parallelSequences: 2, apiEnv: { RESUME_GRACE_MS: '1500' } });
    secondApi = (await stack.addApi()).baseUrl;
    client = new OpenAI({ baseURL: stack.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
    elsewhere = new OpenAI({ baseURL: secondApi, apiKey: STACK_API_KEY, maxRetries: 0 });
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
  });

  const ended = (reader: OpenAI, id: string, timeoutMs = 30_000): Promise<OpenAI.Responses.Response> =>
    waitFor(
      `response ${id} to end`,
      async () => {
        const response = await reader.responses.retrieve(id);
        return ENDED.has(response.status ?? '') ? response : undefined;
      },
      timeoutMs,
    );

  it('answers at once with a queued response, which polls to its end on any instance', async () => {
    const created = await client.responses.create({ model: STACK_MODEL, input: 'Tell me about the fox.', max_output_tokens: 40, background: true });
    assertMatchesResponsesSchema('Response', created);
    expect(created.background).toBe(true);
    expect(['queued', 'in_progress']).toContain(created.status);
    expect(created.output).toEqual([]);
    const done = await ended(elsewhere, created.id);
    assertMatchesResponsesSchema('Response', done);
    expect(['completed', 'incomplete']).toContain(done.status);
    expect(done.output_text).toMatch(/[a-z]{2,}/);
    expect(done.usage?.output_tokens).toBeGreaterThan(0);
    // Its output items can be referenced like any stored response's.
    const next = await elsewhere.responses.create({ model: STACK_MODEL, previous_response_id: done.id, input: 'And then?', max_output_tokens: 16 });
    expect(next.status).not.toBe('failed');

    await expect(client.responses.create({ model: STACK_MODEL, input: 'Hi', background: true, store: false })).rejects.toMatchObject({
      status: 400,
      param: 'background',
    });
  });

  it('cancels a running background response: its job is aborted on the worker, and it stays cancelled', async () => {
    const created = await client.responses.create({ ...LONG, background: true });
    // Followed from another instance until some text has come.
    const following = await SseReader.open(`${secondApi}/responses/${created.id}?stream=true`, STACK_API_KEY);
    const seen: SseFrame[] = [];
    for (let frame = await following.next(); frame && frame.event !== 'response.output_text.delta'; frame = await following.next()) seen.push(frame);
    const cancelled = await elsewhere.responses.cancel(created.id);
    assertMatchesResponsesSchema('Response', cancelled);
    expect(cancelled).toMatchObject({ id: created.id, status: 'cancelled', background: true });
    // The output so far is kept, as at OpenAI.
    const [message] = cancelled.output as OpenAI.Responses.ResponseOutputMessage[];
    expect(message).toMatchObject({ type: 'message', status: 'in_progress' });
    expect((message.content[0] as OpenAI.Responses.ResponseOutputText).text.length).toBeGreaterThan(0);
    // The stream that followed it ends (as failed: the schema has no cancelled event).
    const rest = eventsOf(await following.rest());
    expect(rest.at(-1)?.event).toBe('response.failed');
    const job = await waitFor('the job to fail as cancelled', async () => {
      const found = await stack.queue().getJob(created.id);
      return found?.finishedOn ? found : undefined;
    });
    expect(job.failedReason).toMatch(/cancelled/);
    expect((await client.responses.retrieve(created.id)).status).toBe('cancelled');
    // Cancelling again, or cancelling one that has ended, answers with it as it stands.
    expect((await client.responses.cancel(created.id)).status).toBe('cancelled');
    const finished = await ended(client, (await client.responses.create({ model: STACK_MODEL, input: 'Hi', max_output_tokens: 16, background: true })).id);
    expect(await client.responses.cancel(finished.id)).toMatchObject({ id: finished.id, status: finished.status });
    // Only a background response can be cancelled, as at OpenAI.
    const plain = await client.responses.create({ model: STACK_MODEL, input: 'Hi', max_output_tokens: 16 });
    await expect(client.responses.cancel(plain.id)).rejects.toMatchObject({ status: 400 });
  });

  it('cancels a queued background response: its job leaves the queue and its stream ends at once', async () => {
    // The queue paused (as an operator can in Bull Board): the job waits.
    const queue = stack.queue();
    await queue.pause();
    try {
      const waiting = await SseReader.open(`${stack.baseUrl}/responses`, STACK_API_KEY, { body: { ...LONG, background: true, stream: true } });
      expect(waiting.response.status).toBe(200);
      const [job] = await waitFor('the job to wait', async () => {
        const jobs = await queue.getJobs(['wait', 'prioritized']);
        return jobs.length > 0 ? jobs : undefined;
      });
      const id = String(job.id);
      expect((await elsewhere.responses.retrieve(id)).status).toBe('queued');
      const cancelledAt = Date.now();
      expect((await elsewhere.responses.cancel(id)).status).toBe('cancelled');
      expect(await queue.getJob(id)).toBeUndefined();
      const events = eventsOf(await waiting.rest());
      // Ended by the cancel message the creating instance hears (its mark is checked only every 15 s), not by the 30 s wait limit.
      expect(Date.now() - cancelledAt).toBeLessThan(5000);
      expect(events.map((event) => event.event)).toEqual(['response.created', 'response.in_progress', 'response.failed']);
      expect(events[2].data.response).toMatchObject({ error: { message: 'The response was cancelled.' } });
      for (const event of events) assertMatchesResponseEvent(event.data);
      expect((await client.responses.retrieve(id)).status).toBe('cancelled');
    } finally {
      await queue.resume();
    }
  });

  it('replays the event stream after starting_after, and from the start, on another instance', async () => {
    const body = { model: STACK_MODEL, input: 'Once upon a time', max_output_tokens: 60, temperature: 0, background: true, stream: true };
    const original = eventsOf(await (await SseReader.open(`${stack.baseUrl}/responses`, STACK_API_KEY, { body })).rest());
    expectWellFormedStream(original, original.at(-1)?.event);
    const id = (original[0].data.response as { id: string }).id;

    const after = 4;
    const replayed: ResponseStreamEvent[] = [];
    for await (const event of await elsewhere.responses.retrieve(id, { stream: true, starting_after: after })) replayed.push(event);
    for (const event of replayed) assertMatchesResponseEvent(event);
    expect(replayed.map((event) => event.sequence_number)).toEqual(original.slice(after + 1).map((event) => event.data.sequence_number));
    expect(replayed.map((event) => event.type)).toEqual(original.slice(after + 1).map((event) => event.event));
    expect(textOf(replayed)).toBe(textOf(original.slice(after + 1).map((event) => event.data)));

    // openai-node's own resume: the whole stream fetched again, filtered on the client side.
    const whole = await elsewhere.responses.stream({ response_id: id }).finalResponse();
    expect(whole.output_text).toBe(textOf(original.map((event) => event.data)));
    const resumed: number[] = [];
    for await (const event of client.responses.stream({ response_id: id, starting_after: 10 })) resumed.push(event.sequence_number);
    expect(resumed).toEqual(original.slice(11).map((event) => event.data.sequence_number));
    expect((await client.responses.retrieve(id)).output_text).toBe(whole.output_text);

    // Only a background response's events are kept.
    const plain = await client.responses.create({ model: STACK_MODEL, input: 'Hi', max_output_tokens: 16 });
    const refused = await fetch(`${stack.baseUrl}/responses/${plain.id}?stream=true`, { headers: { authorization: `Bearer ${STACK_API_KEY}` } });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: { param: 'stream' } });
  });

  it('resumes a background stream on another instance after its instance was SIGKILLed, and records its end', async () => {
    const doomed = await stack.addApi();
    const first = await SseReader.open(`${doomed.baseUrl}/responses`, STACK_API_KEY, { body: { ...LONG, background: true, stream: true } });
    const before: SseFrame[] = [];
    for (let frame = await first.next(); frame && before.length < 6; frame = await first.next()) before.push(frame);
    // A second one, polled only: nobody reads its events, and its creator dies too.
    const polled = await new OpenAI({ baseURL: doomed.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 }).responses.create({ ...LONG, background: true });
    await doomed.process.stop('SIGKILL');
    await first.rest().catch(() => undefined); // the connection dies with the instance

    const seen = eventsOf(before);
    const id = (seen[0].data.response as { id: string }).id;
    const resumed = await SseReader.open(`${secondApi}/responses/${id}?stream=true&starting_after=${seen.at(-1)!.data.sequence_number}`, STACK_API_KEY);
    expect(resumed.response.status).toBe(200);
    const whole = [...seen, ...eventsOf(await resumed.rest())];
    expectWellFormedStream(whole, whole.at(-1)?.event);
    expect(['response.completed', 'response.incomplete']).toContain(whole.at(-1)?.event);

    const stored = await ended(client, id);
    expect(stored.output_text).toBe(textOf(whole.map((event) => event.data)));
    const other = await ended(elsewhere, polled.id, 60_000);
    assertMatchesResponsesSchema('Response', other);
    expect(['completed', 'incomplete']).toContain(other.status);
    expect(other.output_text.length).toBeGreaterThan(0);
  });

  it('does not leave a stored response in progress forever when its instance dies mid-run', async () => {
    const doomed = await stack.addApi();
    const first = await SseReader.open(`${doomed.baseUrl}/responses`, STACK_API_KEY, { body: { ...LONG, stream: true } });
    const frame = await first.next();
    const id = (JSON.parse(frame!.data) as { response: { id: string } }).response.id;
    expect((await client.responses.retrieve(id)).status).toBe('in_progress');
    await doomed.process.stop('SIGKILL');
    await first.rest().catch(() => undefined);
    // Its lease lapses a grace period (1.5 s here) after the last renewal.
    const failed = await ended(client, id, 10_000);
    assertMatchesResponsesSchema('Response', failed);
    expect(failed.status).toBe('failed');
    expect(failed.error?.message).toMatch(/instance/);
  });
});
