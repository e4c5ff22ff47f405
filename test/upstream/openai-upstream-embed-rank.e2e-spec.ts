import OpenAI from 'openai';
import { STACK_API_KEY, ServiceStack, waitFor } from '../support/service-stack';

const MODEL = 'tiny-embed';
const RANK_MODEL = 'tiny-rank';

const maxDifference = (a: number[], b: number[]): number => Math.max(...a.map((value, index) => Math.abs(value - b[index])));

/**
 * ENGINE=openai with UPSTREAM_KINDS=embed and =rank: a first deployment of this service (llama.cpp
 * workers on the embedding model and the reranker) is the upstream of a second, whose workers pass
 * embeddings and reranks on and announce only them: the vectors and scores are the upstream's,
 * and a chat request is refused at admission.
 */
describe('the openai upstream engine, embeddings and rerank', () => {
  let upstream: ServiceStack;
  let front: ServiceStack;
  let client: OpenAI;
  let direct: OpenAI;

  beforeAll(async () => {
    upstream = await ServiceStack.start({ name: 'upstream-embed-first', workers: 0, models: [MODEL, RANK_MODEL] });
    await Promise.all([upstream.addWorker({}, MODEL), upstream.addWorker({}, RANK_MODEL)]);
    front = await ServiceStack.start({ name: 'upstream-embed-second', workers: 0, models: [MODEL, RANK_MODEL] });
    const passOn = (kinds: string): NodeJS.ProcessEnv => ({
      ENGINE: 'openai',
      UPSTREAM_BASE_URL: upstream.baseUrl,
      UPSTREAM_API_KEY: STACK_API_KEY,
      UPSTREAM_KINDS: kinds,
      UPSTREAM_MAX_CONCURRENCY: '2',
    });
    await Promise.all([front.addWorker(passOn('embed'), MODEL), front.addWorker(passOn('rank'), RANK_MODEL)]);
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

  it("passes a rerank on: the upstream's scores, best first, with its token count", async () => {
    const body = { model: RANK_MODEL, query: 'Who ran?', documents: ['The rabbit ran down the hole.', 'Alice followed it.', 'The queen shouted.'], top_n: 2 };
    const rerank = (baseUrl: string) =>
      fetch(`${baseUrl}/rerank`, {
        method: 'POST',
        headers: { authorization: `Bearer ${STACK_API_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then(async (response) => ({ status: response.status, body: (await response.json()) as { results: unknown[]; usage: unknown } }));
    const [through, upstreamAnswer] = await Promise.all([rerank(front.baseUrl), rerank(upstream.baseUrl)]);
    expect(through.status).toBe(200);
    expect(through.body.results).toHaveLength(2);
    expect(through.body.results).toEqual(upstreamAnswer.body.results);
    expect(through.body.usage).toEqual(upstreamAnswer.body.usage);
  });

  it('announces only embeddings: a chat request is a 400 naming the model', async () => {
    await waitFor('the API to know what the worker runs', async () => {
      const refused = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Hi' }] }).catch((error: unknown) => error);
      return refused instanceof OpenAI.APIError && refused.status === 400 && refused.param === 'model';
    });
  });
});
