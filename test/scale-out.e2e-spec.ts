import OpenAI from 'openai';
import { ModelQueues } from './support/model-queues';
import { e2eStack } from './support/stack-env';

/**
 * Two API instances and two workers on one Redis (started by global setup): requests to either
 * API are run by either worker, and concurrent streams never receive each other's tokens.
 */
describe('two API instances and two workers on one Redis', () => {
  const stack = e2eStack();
  const clients = stack.apiUrls.map((baseURL) => new OpenAI({ baseURL, apiKey: stack.apiKey, maxRetries: 0 }));
  const queues = new ModelQueues({ url: stack.redisUrl }, stack.model, stack.workerIds);

  afterAll(() => queues.close());

  // Seeded sampling is deterministic, so each seed's answer is known in advance from a
  // non-stream request; a token crossing over to another stream would show as a difference.
  const seeds = Array.from({ length: 12 }, (_, index) => 100 + index);
  const request = (seed: number) => ({
    model: stack.model,
    messages: [{ role: 'user' as const, content: `Story number ${seed}.` }],
    max_tokens: 40,
    temperature: 1,
    seed,
  });

  it('serves concurrent streams through both APIs and both workers without crossing tokens', async () => {
    const expected = new Map<number, string>();
    for (const seed of seeds) {
      const completion = await clients[seed % 2].chat.completions.create(request(seed));
      expected.set(seed, completion.choices[0].message.content!);
    }
    // The check means something only if the answers differ from one another.
    expect(new Set(expected.values()).size).toBeGreaterThan(seeds.length / 2);

    const streams = await Promise.all(
      seeds.map(async (seed) => {
        const stream = await clients[(seed + 1) % 2].chat.completions.create({ ...request(seed), stream: true });
        const ids = new Set<string>();
        let content = '';
        for await (const chunk of stream) {
          ids.add(chunk.id);
          content += chunk.choices[0]?.delta.content ?? '';
        }
        return { seed, ids, content };
      }),
    );

    for (const { seed, ids, content } of streams) {
      expect(ids.size).toBe(1);
      expect(content).toBe(expected.get(seed));
    }

    const streamedJobs = await Promise.all(streams.map(({ ids }) => queues.findJob([...ids][0])));
    const workersUsed = new Set(streamedJobs.map((job) => job?.processedBy));
    expect(workersUsed).toEqual(new Set(stack.workerIds));
  });
});
