import OpenAI from 'openai';
import { postChat } from '../support/chat-requests';
import { assertMatchesSchema } from '../support/openai-schema';
import { STACK_API_KEY, STACK_MODEL, ServiceStack } from '../support/service-stack';

/**
 * Per-key limits counted in Redis and shared by every API instance: two instances, a limit of
 * 3 requests and 400 tokens per 2-second window, one worker with a 256-token context.
 */
describe('per-API-key rate limits', () => {
  let stack: ServiceStack;
  let clients: OpenAI[];
  const hello = { model: STACK_MODEL, messages: [{ role: 'user' as const, content: 'Hello' }], max_tokens: 5 };

  beforeAll(async () => {
    stack = await ServiceStack.start({
      name: 'rate-limits',
      workers: 1,
      parallelSequences: 2,
      apiEnv: { RATE_LIMIT_RPM: '3', RATE_LIMIT_TPM: '400', RATE_LIMIT_WINDOW_SECONDS: '2' },
      // Small enough that a request within the token limit can ask for more than the context holds.
      workerEnv: { CONTEXT_SIZE: '256' },
    });
    const second = await stack.addApi();
    clients = [stack.baseUrl, second.baseUrl].map((baseURL) => new OpenAI({ baseURL, apiKey: STACK_API_KEY, maxRetries: 0 }));
  });
  afterAll(() => stack.stop());

  const nextWindow = () => new Promise((resolve) => setTimeout(resolve, 2100));

  it('answers 429 rate_limit_exceeded with Retry-After once the requests of both instances add up to the limit', async () => {
    await nextWindow();
    await clients[0].chat.completions.create(hello);
    await clients[1].chat.completions.create(hello);
    await clients[0].chat.completions.create(hello);

    const response = await postChat(clients[1].baseURL, STACK_API_KEY, hello);
    expect(response.status).toBe(429);
    const retryAfter = Number(response.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(2);
    expect(response.headers.get('x-ratelimit-limit-requests')).toBe('3');
    const body = (await response.json()) as { error: { type: string; code: string } };
    assertMatchesSchema('ErrorResponse', body);
    expect(body.error).toMatchObject({ type: 'requests', code: 'rate_limit_exceeded' });
  });

  it("lets the official client's retries wait out the limit and then succeed", async () => {
    await nextWindow();
    for (let index = 0; index < 3; index++) await clients[index % 2].chat.completions.create(hello);
    const limited = clients[0].chat.completions.create(hello);
    await expect(limited).rejects.toBeInstanceOf(OpenAI.RateLimitError);

    const patient = new OpenAI({ baseURL: clients[1].baseURL, apiKey: STACK_API_KEY, maxRetries: 3 });
    const startedAt = Date.now();
    const completion = await patient.chat.completions.create(hello);
    expect(completion.choices[0].message.content).toBeTruthy();
    expect(Date.now() - startedAt).toBeGreaterThan(200);
  });

  it('limits tokens too, counting the real usage of finished requests', async () => {
    await nextWindow();
    // Greedy decoding of the tiny model runs to max_tokens, so each answer uses a known amount.
    const large = { ...hello, max_tokens: 150, temperature: 0 };
    const first = await clients[0].chat.completions.create(large);
    expect(first.usage!.completion_tokens).toBe(150);
    await clients[1].chat.completions.create(large);
    // Two real usages (about 170 tokens each) plus this request's estimate exceed 400.
    const error = await clients[0].chat.completions.create(large).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect((error as InstanceType<typeof OpenAI.RateLimitError>).error).toMatchObject({ type: 'tokens', code: 'rate_limit_exceeded' });
  });

  it('takes none of the tokens a refused request asked for', async () => {
    await nextWindow();
    const response = await postChat(clients[0].baseURL, STACK_API_KEY, { ...hello, max_tokens: 1000 });
    expect(response.status).toBe(429);
    expect(response.headers.get('x-ratelimit-remaining-tokens')).toBe('400');
    // Had its 1,000 stayed counted, the key would be over its 400 for the rest of the window.
    const small = await clients[1].chat.completions.create(hello);
    expect(small.choices[0].message.content).toBeTruthy();
  });

  it('gives back the tokens of a request that failed before any output', async () => {
    await nextWindow();
    // Admitted (an estimate of about 302 tokens), then refused by the worker: 300 exceed the context.
    const tooLong = await clients[0].chat.completions.create({ ...hello, max_tokens: 300 }).catch((caught: unknown) => caught);
    expect(tooLong).toBeInstanceOf(OpenAI.BadRequestError);
    expect((tooLong as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('context_length_exceeded');
    // Its estimate kept, this one's 152 would make 454 of 400.
    const next = await clients[1].chat.completions.create({ ...hello, max_tokens: 150 });
    expect(next.usage!.completion_tokens).toBeGreaterThan(0);
  });
});
