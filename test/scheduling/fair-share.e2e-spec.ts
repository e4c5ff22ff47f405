import OpenAI from 'openai';
import { Backlog } from '../support/queue-backlog';
import { ServiceStack } from '../support/service-stack';

const HEAVY_KEY = 'sk-fair-share-heavy-0123456789';
const LIGHT_KEY = 'sk-fair-share-light-0123456789';
/** Two keys that send nothing before the weights test: one of weight 3 (with fair share on), one of 1. */
const WEIGHTED_KEY = 'sk-fair-share-weighted-0123456789';
const PLAIN_KEY = 'sk-fair-share-plain-0123456789';
const SLOW_MODEL = 'slow-synthetic';

/**
 * Fair share between API keys (FAIR_SHARE) through the official client, on one worker slot held
 * busy (a synthetic engine: 300 tokens 10 ms apart, 3 s) while requests queue behind it. The
 * order the jobs started in (BullMQ's processedOn) is what a user feels as queue wait.
 */
async function startStack(name: string, fairShare: boolean): Promise<ServiceStack> {
  const stack = await ServiceStack.start({
    name,
    workers: 0,
    apiKeys: [HEAVY_KEY, LIGHT_KEY, WEIGHTED_KEY, PLAIN_KEY],
    models: [SLOW_MODEL],
    // The order is read off the shared queue, so every job goes there: with affinity a repeated
    // conversation would wait on the worker's own queue, which the worker serves first.
    apiEnv: { FAIR_SHARE: String(fairShare), PRIORITY_TIER_KEYS: HEAVY_KEY, FAIR_SHARE_WEIGHTS: `${WEIGHTED_KEY}=3`, AFFINITY: 'false' },
  });
  await stack.addWorker({ ENGINE: 'synthetic', SYNTHETIC_TOKENS: '300', SYNTHETIC_TOKEN_INTERVAL_MS: '10', SYNTHETIC_SLOTS: '1' }, SLOW_MODEL);
  return stack;
}

/** The describe block's stack, started before its tests and stopped after them. */
function stackFor(name: string, fairShare: boolean): () => ServiceStack {
  let stack: ServiceStack | undefined;
  beforeAll(async () => {
    stack = await startStack(name, fairShare);
  }, 60_000);
  afterAll(async () => {
    await stack?.stop();
  });
  return () => stack!;
}

const clientsOf = (stack: ServiceStack) => ({
  heavy: new OpenAI({ baseURL: stack.baseUrl, apiKey: HEAVY_KEY, maxRetries: 0 }),
  light: new OpenAI({ baseURL: stack.baseUrl, apiKey: LIGHT_KEY, maxRetries: 0 }),
});

describe('fair share between API keys, on', () => {
  const running = stackFor('fair-share-on', true);

  it("starts a light key's request before a heavy key's backlog in the same tier", async () => {
    const stack = running();
    const { heavy, light } = clientsOf(stack);
    const backlog = await Backlog.behindBusySlot(stack.queue(SLOW_MODEL), SLOW_MODEL, heavy);
    const heavyQueued = await backlog.add(heavy, 5);
    const [lightQueued] = await backlog.add(light, 1);
    const started = await backlog.startTimes();
    for (const index of heavyQueued) expect(started[lightQueued]).toBeLessThan(started[index]);
    // The heavy key's own requests keep their order.
    const heavyStarts = heavyQueued.map((index) => started[index]);
    expect(heavyStarts).toEqual([...heavyStarts].sort((a, b) => a - b));
  }, 30_000);

  it('never moves a request across tiers: priority, then default, then flex, whatever the counters', async () => {
    const stack = running();
    const { heavy, light } = clientsOf(stack);
    // The light key's default counter grows by a long answer; the heavy key's flex counter is low.
    const backlog = await Backlog.behindBusySlot(stack.queue(SLOW_MODEL), SLOW_MODEL, light);
    const heavyFlex = await backlog.add(heavy, 2, 'flex');
    const lightDefault = await backlog.add(light, 2, 'default');
    const heavyPriority = await backlog.add(heavy, 2, 'priority');
    const started = await backlog.startTimes();
    const last = (indexes: number[]) => Math.max(...indexes.map((index) => started[index]));
    const first = (indexes: number[]) => Math.min(...indexes.map((index) => started[index]));
    expect(last(heavyPriority)).toBeLessThan(first(lightDefault));
    expect(last(lightDefault)).toBeLessThan(first(heavyFlex));
  }, 30_000);

  it('serves a key of weight 3 about three requests to one of weight 1 while both wait', async () => {
    const stack = running();
    const { heavy } = clientsOf(stack);
    const weighted = new OpenAI({ baseURL: stack.baseUrl, apiKey: WEIGHTED_KEY, maxRetries: 0 });
    const plain = new OpenAI({ baseURL: stack.baseUrl, apiKey: PLAIN_KEY, maxRetries: 0 });
    const backlog = await Backlog.behindBusySlot(stack.queue(SLOW_MODEL), SLOW_MODEL, heavy);
    // Each request is charged about 43 weighted tokens (3 of prompt, 2 × 20 of answer): the
    // weighted key's start 15 apart, the plain key's 43, both from the same virtual time.
    const weightedQueued = await backlog.add(weighted, 6);
    const [, plainSecond] = await backlog.add(plain, 2);
    const started = await backlog.startTimes();
    // At weight 1 two of the first key's requests would start before the plain key's second.
    expect(weightedQueued.filter((index) => started[index] < started[plainSecond]).length).toBeGreaterThanOrEqual(3);
  }, 30_000);

  it("reports each key's served tokens and queue wait by its id, never the key", async () => {
    const text = await (await fetch(`${running().baseUrl.replace(/\/v1$/, '')}/metrics`)).text();
    expect(text).toMatch(/llm_api_key_served_tokens_total\{model="slow-synthetic",key="[0-9a-f]{24}",kind="completion"\} \d+/);
    expect(text).toMatch(/llm_api_key_queue_wait_seconds_count\{model="slow-synthetic",tier="default",key="[0-9a-f]{24}"\} \d+/);
    expect(text).not.toContain(HEAVY_KEY);
    expect(text).not.toContain(LIGHT_KEY);
  });
});

describe('fair share between API keys, off', () => {
  const running = stackFor('fair-share-off', false);

  it('takes a tier first come, first served: the light key waits behind the backlog', async () => {
    const stack = running();
    const { heavy, light } = clientsOf(stack);
    const backlog = await Backlog.behindBusySlot(stack.queue(SLOW_MODEL), SLOW_MODEL, heavy);
    const heavyQueued = await backlog.add(heavy, 3);
    const [lightQueued] = await backlog.add(light, 1);
    const started = await backlog.startTimes();
    for (const index of heavyQueued) expect(started[lightQueued]).toBeGreaterThan(started[index]);
  }, 30_000);
});
