import OpenAI from 'openai';
import { STACK_API_KEY, ServiceStack, waitFor } from '../support/service-stack';

const MODEL = 'tiny-embed';

const maxDifference = (a: number[], b: number[]): number => Math.max(...a.map((value, index) => Math.abs(value - b[index])));

/**
 * ENGINE=openai with UPSTREAM_KINDS=embed: a first deployment of this service (a llama.cpp worker
 * on the embedding model) is the upstream of a second, whose worker passes embeddings on and
 * announces only them: the vectors are the upstream's, and a chat request is refused at admission.
 */
describe('the openai upstream engine, embeddings', () => {
  let upstream: ServiceStack;
  let front: ServiceStack;
  let client: OpenAI;
  let direct: OpenAI;

  beforeAll(async () => {
    upstream = await ServiceStack.start({ name: 'upstream-embed-first', workers: 0, models: [MODEL] });
    await upstream.addWorker({}, MODEL);
    front = await ServiceStack.start({ name: 'upstream-embed-second', workers: 0, models: [MODEL] });
    await front.addWorker(
      { ENGINE: 'openai', UPSTREAM_BASE_URL: upstream.baseUrl, UPSTREAM_API_KEY: STACK_API_KEY, UPSTREAM_KINDS: 'embed', UPSTREAM_MAX_CONCURRENCY: '2' },
      MODEL,
    );
    client = new OpenAI({ baseURL: front.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
    direct = new OpenAI({ baseURL: upstream.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
  }, 120_000);

  afterAll(async () => {
    await front?.stop();
    await upstream?.stop();
  });

  it("passes embeddings on: the upstream's vectors, in order, with its token count", async () => {
    const input = ['The rabbit ran down the hole.', 'Alice followed it.', 'The queen shouted.'];
    const [through, upstreamAnswer] = await Promise.all([
      client.embeddings.create({ model: MODEL, input }),
      direct.embeddings.create({ model: MODEL, input, encoding_format: 'float' }),
    ]);
    expect(through.data.map(({ index }) => index)).toEqual([0, 1, 2]);
    expect(through.usage.prompt_tokens).toBe(upstreamAnswer.usage.prompt_tokens);
    for (const [index, { embedding }] of through.data.entries()) expect(maxDifference(embedding, upstreamAnswer.data[index].embedding)).toBeLessThan(1e-6);
  });

  it('announces only embeddings: a chat request is a 400 naming the model', async () => {
    await waitFor('the API to know what the worker runs', async () => {
      const refused = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Hi' }] }).catch((error: unknown) => error);
      return refused instanceof OpenAI.APIError && refused.status === 400 && refused.param === 'model';
    });
  });
});
