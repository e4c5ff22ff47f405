import OpenAI from 'openai';
import { STACK_API_KEY, STACK_MODEL, ServiceStack, waitFor } from './support/service-stack';

const PLAIN_KEY = 'sk-plain-tenant-0123456789';
const SLOW_MODEL = 'slow-synthetic';

/**
 * `service_tier` through the official client: the answer says the tier that served it (priority
 * only for the keys configured for it), and one busy slot takes waiting requests in tier order,
 * priority before default before flex, whatever order they came in.
 */
describe('service tiers', () => {
  let stack: ServiceStack;
  let priorityClient: OpenAI;
  let plainClient: OpenAI;

  beforeAll(async () => {
    stack = await ServiceStack.start({
      name: 'tiers',
      apiKeys: [STACK_API_KEY, PLAIN_KEY],
      models: [STACK_MODEL, SLOW_MODEL],
      apiEnv: { PRIORITY_TIER_KEYS: STACK_API_KEY },
    });
    // One slot, tokens 10 ms apart: a whole answer (300 tokens) holds it for 3 s while others queue.
    await stack.addWorker({ ENGINE: 'synthetic', SYNTHETIC_TOKENS: '300', SYNTHETIC_TOKEN_INTERVAL_MS: '10', SYNTHETIC_SLOTS: '1' }, SLOW_MODEL);
    priorityClient = new OpenAI({ baseURL: stack.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
    plainClient = new OpenAI({ baseURL: stack.baseUrl, apiKey: PLAIN_KEY, maxRetries: 0 });
  }, 60_000);

  afterAll(async () => {
    await stack?.stop();
  });

  const ask = { model: STACK_MODEL, messages: [{ role: 'user' as const, content: 'Hi' }], max_tokens: 3 };

  it('answers with the tier that served it; priority only for keys allowed it', async () => {
    expect((await priorityClient.chat.completions.create({ ...ask, service_tier: 'priority' })).service_tier).toBe('priority');
    expect((await plainClient.chat.completions.create({ ...ask, service_tier: 'priority' })).service_tier).toBe('default');
    expect((await plainClient.chat.completions.create({ ...ask, service_tier: 'flex' })).service_tier).toBe('flex');
    expect((await plainClient.chat.completions.create({ ...ask, service_tier: 'auto' })).service_tier).toBe('default');
    expect((await plainClient.chat.completions.create(ask)).service_tier).toBe('default');
    const chunks = [];
    for await (const chunk of await priorityClient.chat.completions.create({ ...ask, service_tier: 'priority', stream: true })) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.every((chunk) => chunk.service_tier === 'priority')).toBe(true);
  });

  it('takes waiting requests in tier order: priority, then default, then flex', async () => {
    const queue = stack.queue(SLOW_MODEL);
    // The queued ones are short (5 tokens), so the test does not wait on them.
    const request = (client: OpenAI, tier: 'priority' | 'default' | 'flex') =>
      client.chat.completions.create({ model: SLOW_MODEL, messages: [{ role: 'user', content: tier }], service_tier: tier, max_tokens: 5 });
    const busy = plainClient.chat.completions.create({ model: SLOW_MODEL, messages: [{ role: 'user', content: 'busy' }] });
    await waitFor('the slot to be busy', async () => (await queue.getActiveCount()) === 1);
    // Queued lowest tier first, each after the one before is in the queue.
    const answers: Array<Promise<OpenAI.ChatCompletion>> = [];
    for (const [client, tier] of [
      [plainClient, 'flex'],
      [plainClient, 'default'],
      [priorityClient, 'priority'],
    ] as const) {
      const waitingBefore = (await queue.getWaitingCount()) + (await queue.getPrioritizedCount());
      answers.push(request(client, tier));
      await waitFor(`the ${tier} request to wait`, async () => (await queue.getWaitingCount()) + (await queue.getPrioritizedCount()) > waitingBefore);
    }
    const done = await Promise.all([busy, ...answers]);
    const started = await Promise.all(done.map(async (answer) => (await queue.getJob(answer.id))?.processedOn ?? 0));
    const [, flex, plain, priority] = started;
    expect(priority).toBeLessThan(plain);
    expect(plain).toBeLessThan(flex);
    expect(done.map((answer) => answer.service_tier)).toEqual(['default', 'flex', 'default', 'priority']);
  });
});
