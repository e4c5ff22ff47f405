import { assertMatchesSchema } from '../support/openai-schema';
import { recordFigure } from '../support/figures';
import { STACK_API_KEY, STACK_MODEL, ServiceStack } from '../support/service-stack';
import { longRequest, postChat, readStream } from '../support/chat-requests';

const hello = { model: STACK_MODEL, messages: [{ role: 'user', content: 'Hello' }], max_tokens: 5 };

/** Redis is killed under load and started again on the same port; no process is restarted. */
describe('Redis restarted under load', () => {
  let stack: ServiceStack;

  beforeAll(async () => {
    stack = await ServiceStack.start({ name: 'redis-restart', workers: 1, parallelSequences: 2 });
  });
  afterAll(() => stack.stop());

  it('ends in-flight streams with a clear error within 2 s, refuses new work with 503, and serves again within 5 s', async () => {
    let killedAt = 0;
    let killing: Promise<void> | undefined;
    const streams = [1, 2].map(async (seed) => {
      const response = await postChat(stack.baseUrl, STACK_API_KEY, longRequest(STACK_MODEL, { stream: true, seed }));
      const reading = await readStream(response, (_event, soFar) => {
        if (!killing && soFar.content.length > 30) {
          killedAt = Date.now();
          killing = stack.killRedis();
        }
      });
      return { reading, endedAt: Date.now() };
    });
    const results = await Promise.all(streams);
    await killing;

    for (const { reading, endedAt } of results) {
      expect(reading.sawDone).toBe(true);
      const last = reading.events.at(-1) as unknown as { error: { code: string } };
      assertMatchesSchema('ErrorResponse', last);
      recordFigure('redis killed -> in-flight stream ended', endedAt - killedAt);
      expect(endedAt - killedAt).toBeLessThan(2000);
    }

    const refusedAt = Date.now();
    const refused = await postChat(stack.baseUrl, STACK_API_KEY, hello);
    expect(refused.status).toBe(503);
    recordFigure('redis down -> 503 answered in', Date.now() - refusedAt);
    expect(Date.now() - refusedAt).toBeLessThan(1000);
    const body = (await refused.json()) as { error: { code: string } };
    assertMatchesSchema('ErrorResponse', body);
    expect(refused.headers.get('retry-after')).toBeTruthy();

    await stack.startRedisAgain();
    const backAt = Date.now();
    let status = 0;
    while (Date.now() - backAt < 10_000) {
      const response = await postChat(stack.baseUrl, STACK_API_KEY, hello, AbortSignal.timeout(3000)).catch(() => undefined);
      status = response?.status ?? 0;
      if (status === 200) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toBe(200);
    recordFigure('redis back -> first 200', Date.now() - backAt);
    expect(Date.now() - backAt).toBeLessThan(5000);
  });
});
