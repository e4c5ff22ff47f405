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

/** SIGTERM while Redis is away: a shutdown step waiting on Redis must not hold a process for good. */
describe('SIGTERM while Redis is down', () => {
  it('the API and the worker still exit, once their drain time and a margin have passed', async () => {
    const stack = await ServiceStack.start({
      name: 'redis-down-sigterm',
      workers: 1,
      apiEnv: { SHUTDOWN_DRAIN_MS: '1000' },
      workerEnv: { MAX_GENERATION_MS: '2000' },
    });
    try {
      await stack.killRedis();
      const stoppedAt = Date.now();
      // Far beyond each deadline (drain + 10 s), so that only a process that hangs meets the SIGKILL.
      const [apiExit, workerExit] = await Promise.all([stack.api.process.stop('SIGTERM', 40_000), stack.workers[0].stop('SIGTERM', 40_000)]);
      const took = Date.now() - stoppedAt;
      recordFigure('redis down -> SIGTERMed API and worker exited', took);
      expect(took).toBeLessThan(20_000);
      for (const [exitCode, process_] of [
        [apiExit, stack.api.process],
        [workerExit, stack.workers[0]],
      ] as const) {
        // Either the shutdown finished (the re-raised SIGTERM) or its deadline ended it (status 1):
        // never SIGKILL, and never a status 0 from a shutdown that did not finish.
        const ended = process_.child.signalCode === 'SIGTERM' ? 'SIGTERM' : `exit ${String(exitCode)}`;
        expect(['SIGTERM', 'exit 1']).toContain(ended);
      }
    } finally {
      await stack.stop();
    }
  });
});
