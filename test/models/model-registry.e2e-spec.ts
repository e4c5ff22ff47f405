import OpenAI from 'openai';
import { STACK_API_KEY, ServiceStack, waitFor } from '../support/service-stack';

/**
 * Two generated models at once, one queue each, workers per model; the API learns live models
 * from the workers' announcements. Configured: tiny-chat (with a worker) and scale-from-zero
 * (none). Live only: tiny-fables.
 */
describe('live model registry with two models', () => {
  let stack: ServiceStack;
  let client: OpenAI;

  beforeAll(async () => {
    stack = await ServiceStack.start({
      name: 'registry',
      workers: 1,
      models: ['tiny-chat', 'scale-from-zero'],
      apiEnv: { MAX_QUEUE_WAIT_MS: '1000' },
    });
    await stack.addWorker({}, 'tiny-fables');
    client = new OpenAI({ baseURL: stack.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
  });
  afterAll(() => stack.stop());

  const listed = async () => (await client.models.list()).data.map((model) => model.id).sort();

  it('lists live models and configured ones that may scale up from zero', async () => {
    await waitFor('tiny-fables to be listed', async () => (await listed()).includes('tiny-fables'));
    expect(await listed()).toEqual(['scale-from-zero', 'tiny-chat', 'tiny-fables']);
  });

  it("routes each model's requests to its own queue and workers", async () => {
    const [chat, fables] = await Promise.all(
      ['tiny-chat', 'tiny-fables'].map((model) =>
        client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Tell a story.' }], max_tokens: 60, seed: 3 }),
      ),
    );
    expect(chat.model).toBe('tiny-chat');
    expect(fables.model).toBe('tiny-fables');
    // Each model speaks its own corpus: Alice in Wonderland or Aesop's fables.
    const words = (text: string | null) => new Set((text ?? '').toLowerCase().match(/[a-z]+/g));
    const onlyFables = [...words(fables.choices[0].message.content)].filter((word) => !words(chat.choices[0].message.content).has(word));
    expect(onlyFables.length).toBeGreaterThan(0);
    const fableJob = await stack.queue('tiny-fables').getJob(fables.id);
    expect(fableJob?.processedBy).toMatch(/registry-worker-2/);
  });

  it('lets a configured model without workers wait in its queue up to the wait limit', async () => {
    const startedAt = Date.now();
    const error = await client.chat.completions
      .create({ model: 'scale-from-zero', messages: [{ role: 'user', content: 'Hi' }] }, { maxRetries: 0 })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('no_capacity');
    // It waited (MAX_QUEUE_WAIT_MS is 1,000 here) rather than being refused at once.
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(900);
  });

  it('answers 404 for a model nobody configured or serves', async () => {
    const error = await client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'Hi' }] }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('drops a model whose last worker is gone', async () => {
    await stack.workers[1].stop('SIGTERM');
    await waitFor('tiny-fables to leave the list', async () => !(await listed()).includes('tiny-fables'));
    const error = await client.chat.completions.create({ model: 'tiny-fables', messages: [{ role: 'user', content: 'Hi' }] }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('drops a killed worker once its announcement expires', async () => {
    await stack.addWorker({}, 'tiny-fables');
    await waitFor('tiny-fables to be listed again', async () => (await listed()).includes('tiny-fables'));
    await stack.workers[2].stop('SIGKILL');
    await waitFor('the killed worker to expire', async () => !(await listed()).includes('tiny-fables'), 15_000);
  });
});
