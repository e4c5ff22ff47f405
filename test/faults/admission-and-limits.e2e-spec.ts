import fc from 'fast-check';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { resolve } from 'node:path';
import { completionQueuePrefix, storedCompletionKeys } from '@app/contracts';
import { REPO_ROOT } from '../../tools/local-stack/services';
import { scrapeUntil, serverRoot, total } from '../operators/prometheus-text';
import { assertMatchesSchema } from '../support/openai-schema';
import { STACK_API_KEY, STACK_MODEL, ServiceStack, waitFor } from '../support/service-stack';
import { longRequest, postChat, readStream } from '../support/chat-requests';

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

async function errorOf(response: Response): Promise<ErrorBody['error']> {
  const body = (await response.json()) as ErrorBody;
  assertMatchesSchema('ErrorResponse', body);
  return body.error;
}

const SMALL_CONTEXT_MODEL = 'tiny-chat-512';
const SMALL_CONTEXT = 512;

/**
 * Work the service cannot do is refused before the first byte, and work that takes too long
 * ends with a clear error. One worker with one sequence; at most one job may wait; a job waits
 * at most 1.5 s for a worker; a generation may run 1 s; a key keeps at most 2 stored completions.
 */
describe('admission and time limits', () => {
  let stack: ServiceStack;

  beforeAll(async () => {
    stack = await ServiceStack.start({
      name: 'limits',
      workers: 1,
      parallelSequences: 1,
      models: [STACK_MODEL, 'model-without-workers', SMALL_CONTEXT_MODEL],
      // The limits are read off the shared queue's lists: every job goes there. How a full shared
      // queue refuses a turn affinity would place on its worker is in affinity-placement.spec.ts.
      apiEnv: { MAX_WAITING_JOBS: '1', MAX_QUEUE_WAIT_MS: '1500', STORE_MAX_PER_KEY: '2', AFFINITY: 'false' },
      workerEnv: { MAX_GENERATION_MS: '1000' },
    });
    // The same model file with a small context, so a prompt can end exactly at its edge.
    await stack.addWorker({ CONTEXT_SIZE: String(SMALL_CONTEXT), MODEL_PATH: resolve(REPO_ROOT, `models/${STACK_MODEL}.gguf`) }, SMALL_CONTEXT_MODEL);
  });
  afterAll(() => stack.stop());

  /** Fills the queue (one job running, one waiting), runs `whileFull`, then lets the two go. */
  async function withQueueFull(whileFull: () => Promise<void>): Promise<void> {
    const queue = stack.queue();
    const controllers = [new AbortController(), new AbortController()];
    // One after the other: the limit is exact, so two sent together may both count as waiting.
    const send = (controller: AbortController) => postChat(stack.baseUrl, STACK_API_KEY, longRequest(STACK_MODEL), controller.signal).catch(() => undefined);
    const pending = [send(controllers[0])];
    try {
      await waitFor('one job running', async () => (await queue.getActiveCount()) === 1);
      pending.push(send(controllers[1]));
      await waitFor('one job running and one waiting', async () => (await queue.getActiveCount()) === 1 && (await queue.getWaitingCount()) === 1);
      await whileFull();
    } finally {
      for (const controller of controllers) controller.abort();
      await Promise.all(pending);
    }
  }

  it('answers 503 with Retry-After before queueing anything when the queue is full', async () => {
    await withQueueFull(async () => {
      const refused = await postChat(stack.baseUrl, STACK_API_KEY, longRequest(STACK_MODEL, { stream: true }));
      expect(refused.status).toBe(503);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await errorOf(refused)).toMatchObject({ type: 'server_error', code: 'queue_full' });
      expect(await stack.queue().getWaitingCount()).toBe(1);
    });
  });

  it("keeps a key's last STORE_MAX_PER_KEY stored completions, and one refused as the queue was full takes no earlier one's place", async () => {
    const client = new OpenAI({ baseURL: stack.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
    const ask = { model: STACK_MODEL, messages: [{ role: 'user' as const, content: 'Tell me about the queen.' }], max_tokens: 3, store: true };
    const first = await client.chat.completions.create(ask);
    const second = await client.chat.completions.create(ask);
    const redis = new Redis(stack.redis.url);
    const storedRecords = async (): Promise<number> => (await redis.keys(storedCompletionKeys('*').record)).length;
    try {
      await withQueueFull(async () => {
        for (const stream of [false, true]) {
          const refused = await postChat(stack.baseUrl, STACK_API_KEY, { ...ask, stream });
          expect(refused.status).toBe(503);
          expect(await errorOf(refused)).toMatchObject({ code: 'queue_full' });
        }
      });
      // The refused requests' records are gone, and both earlier completions are still there.
      await waitFor('only the answered completions stored', async () => (await storedRecords()) === 2);
      for (const { id } of [first, second]) expect((await client.chat.completions.retrieve(id)).id).toBe(id);

      // A third answered one passes the limit: the oldest goes.
      const third = await client.chat.completions.create(ask);
      const gone = (id: string) =>
        client.chat.completions.retrieve(id).then(
          () => false,
          (error: unknown) => error instanceof OpenAI.NotFoundError,
        );
      await waitFor('the oldest stored completion dropped', () => gone(first.id));
      for (const { id } of [second, third]) expect((await client.chat.completions.retrieve(id)).id).toBe(id);
      expect(await storedRecords()).toBe(2);
    } finally {
      redis.disconnect();
    }
  });

  it('holds the waiting limit exactly when many requests arrive at once', async () => {
    // No worker serves this model, so every admitted job waits: exactly MAX_WAITING_JOBS may.
    const queue = stack.queue('model-without-workers');
    const body = { model: 'model-without-workers', messages: [{ role: 'user', content: 'Anyone there?' }] };
    let mostWaiting = 0;
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        mostWaiting = Math.max(mostWaiting, await queue.getWaitingCount());
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
    const responses = await Promise.all(Array.from({ length: 40 }, () => postChat(stack.baseUrl, STACK_API_KEY, body)));
    watching = false;
    await watcher;
    const codes = await Promise.all(responses.map(async (response) => `${response.status} ${(await errorOf(response)).code}`));
    expect(codes.filter((code) => code === '503 queue_full')).toHaveLength(39);
    expect(codes.filter((code) => code === '503 no_capacity')).toHaveLength(1);
    expect(mostWaiting).toBeLessThanOrEqual(1);
    // Nothing is left of a refused job (nor of the admitted one, withdrawn when no worker took it).
    const redis = new Redis(stack.redis.url);
    try {
      expect(await redis.keys(`${completionQueuePrefix('model-without-workers')}:*:chatcmpl-*`)).toEqual([]);
    } finally {
      redis.disconnect();
    }
  });

  it('holds the limit for any burst size (property-based, seed printed on failure)', async () => {
    const queue = stack.queue('model-without-workers');
    const body = { model: 'model-without-workers', messages: [{ role: 'user', content: 'Anyone there?' }] };
    const seed = Number(process.env.FUZZ_SEED ?? 20261123);
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 2, max: 60 }), async (burst) => {
        // The one admitted job of the run before has been withdrawn by now (MAX_QUEUE_WAIT_MS).
        await waitFor('an empty queue', async () => (await queue.getWaitingCount()) === 0);
        const responses = await Promise.all(Array.from({ length: burst }, () => postChat(stack.baseUrl, STACK_API_KEY, body)));
        const codes = await Promise.all(responses.map(async (response) => (await errorOf(response)).code));
        return codes.filter((code) => code === 'no_capacity').length === 1 && codes.filter((code) => code === 'queue_full').length === burst - 1;
      }),
      { numRuns: 4, seed, verbose: true },
    );
  });

  it('answers 503 when no worker starts the job in time, and takes the job off the queue', async () => {
    const startedAt = Date.now();
    const response = await postChat(stack.baseUrl, STACK_API_KEY, {
      model: 'model-without-workers',
      messages: [{ role: 'user', content: 'Anyone there?' }],
      stream: true,
    });
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBeTruthy();
    expect(await errorOf(response)).toMatchObject({ code: 'no_capacity' });
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(1400);
    expect(Date.now() - startedAt).toBeLessThan(5000);
    const queue = stack.queue('model-without-workers');
    expect(await queue.getWaitingCount()).toBe(0);
    // Operators see it as an error by code (the exact-limit test before this one made one too).
    const { samples } = await scrapeUntil(
      `${serverRoot(stack.baseUrl)}/metrics`,
      (found) => total(found, 'llm_api_completion_errors_total', { model: 'model-without-workers', code: 'no_capacity' }) >= 1,
    );
    expect(total(samples, 'llm_api_completion_errors_total', { model: 'model-without-workers', code: 'no_capacity' })).toBeGreaterThanOrEqual(1);
  });

  it('ends a generation that runs past the limit with a clear error event, then [DONE]', async () => {
    const response = await postChat(stack.baseUrl, STACK_API_KEY, longRequest(STACK_MODEL, { max_tokens: 4000, stream: true }));
    expect(response.status).toBe(200);
    const reading = await readStream(response);
    expect(reading.sawDone).toBe(true);
    const last = reading.events.at(-1) as unknown as ErrorBody;
    assertMatchesSchema('ErrorResponse', last);
    expect(last.error.code).toBe('generation_timeout');
    expect(reading.content.length).toBeGreaterThan(0);
  });

  it('rejects prompt plus max_tokens beyond the context with 400 context_length_exceeded before any SSE header', async () => {
    const response = await postChat(stack.baseUrl, STACK_API_KEY, {
      model: STACK_MODEL,
      messages: [{ role: 'user', content: 'Hello' }],
      max_tokens: 5000,
      stream: true,
    });
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toMatch(/application\/json/);
    const error = await errorOf(response);
    expect(error).toMatchObject({ type: 'invalid_request_error', code: 'context_length_exceeded', param: 'messages' });
    expect(error.message).toMatch(/maximum context length is \d+ tokens/);
  });

  it('answers a prompt that leaves the llama.cpp engine two tokens, and refuses one that leaves one, instead of dropping part of it', async () => {
    const contextSize = SMALL_CONTEXT;
    const ask = (words: number, extra: Record<string, unknown> = {}) =>
      postChat(stack.baseUrl, STACK_API_KEY, {
        model: SMALL_CONTEXT_MODEL,
        messages: [{ role: 'user', content: 'cat'.concat(' cat'.repeat(words)) }],
        temperature: 0,
        ...extra,
      });
    const promptTokens = async (words: number): Promise<number> => {
      const response = await ask(words, { max_tokens: 1 });
      expect(response.status).toBe(200);
      return ((await response.json()) as { usage: { prompt_tokens: number } }).usage.prompt_tokens;
    };
    const [none, one] = [await promptTokens(0), await promptTokens(1)];
    expect(one - none).toBe(1); // each " cat" is one token, so a prompt of any length can be made
    const wordsFor = (tokens: number) => tokens - none;

    const twoLeft = await ask(wordsFor(contextSize - 2));
    expect(twoLeft.status).toBe(200);
    const answered = (await twoLeft.json()) as { usage: { prompt_tokens: number; completion_tokens: number } };
    // Not refused at the edge: two free tokens are enough for LlamaChat to keep the history whole
    // (checked against the sequence's tokens in a throwaway script; a bigram model's answer cannot show it).
    expect(answered.usage.prompt_tokens).toBe(contextSize - 2);
    expect(answered.usage.completion_tokens).toBeLessThanOrEqual(2);

    const oneLeft = await ask(wordsFor(contextSize - 1));
    expect(oneLeft.status).toBe(400);
    const error = await errorOf(oneLeft);
    expect(error).toMatchObject({ type: 'invalid_request_error', code: 'context_length_exceeded', param: 'messages' });
    expect(error.message).toBe(
      `This model's maximum context length is ${contextSize} tokens. However, your messages resulted in ${contextSize - 1} tokens, and this engine needs at least 2 more for the completion. Please reduce the length of the messages or completion.`,
    );
  });

  it('refuses with 400 context_length_exceeded a tool call that outgrows the context, rather than failing or shortening the conversation', async () => {
    const tools = [
      {
        type: 'function',
        function: {
          name: 'find_rabbit',
          description: 'Where the rabbit is.',
          parameters: { type: 'object', properties: { hour: { type: 'integer' } }, required: ['hour'] },
        },
      },
    ];
    const ask = (words: number) =>
      postChat(stack.baseUrl, STACK_API_KEY, {
        model: SMALL_CONTEXT_MODEL,
        messages: [{ role: 'user', content: 'cat'.concat(' cat'.repeat(words)) }],
        tools,
        tool_choice: 'required',
        temperature: 0,
      });
    const roomy = await ask(0);
    expect(roomy.status).toBe(200);
    const promptTokens = ((await roomy.json()) as { usage: { prompt_tokens: number } }).usage.prompt_tokens;
    // A call takes a few dozen tokens here, its syntax evaluated beyond what max_tokens counts.
    const tight = await ask(SMALL_CONTEXT - 20 - promptTokens);
    expect(tight.status).toBe(400);
    const error = await errorOf(tight);
    expect(error).toMatchObject({ type: 'invalid_request_error', code: 'context_length_exceeded', param: 'messages' });
    expect(error.message).toMatch(/the answer did not fit in the rest/);
  });
});
