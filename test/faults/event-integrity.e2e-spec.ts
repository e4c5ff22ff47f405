import { Redis } from 'ioredis';
import { ModelQueues } from '../support/model-queues';
import { assertMatchesSchema } from '../support/openai-schema';
import { e2eStack } from '../support/stack-env';
import { longRequest, postChat, readStream } from '../support/chat-requests';

/**
 * Events that are lost or mangled on a completion's channel end the stream with an error: the
 * client never gets a silently shorter or garbled text. An event that arrives twice (a publish
 * resent after a reconnect) is dropped. The test itself plays the broken network by publishing
 * on the real channel of a real, running completion.
 */
describe('lost, out-of-order or malformed events', () => {
  const stack = e2eStack();
  const redis = new Redis(stack.redisUrl);
  const queues = new ModelQueues(redis, stack.model, stack.workerIds);
  afterAll(async () => {
    await queues.close();
    await redis.quit();
  });

  async function streamWithInjected(message: (completionId: string) => string, maxTokens = 3000) {
    const response = await postChat(stack.apiUrls[0], stack.apiKey, longRequest(stack.model, { stream: true, max_tokens: maxTokens }));
    let injected = false;
    return readStream(response, (event) => {
      if (!injected && typeof event.id === 'string') {
        injected = true;
        const completionId = event.id;
        // Where the worker replies: the job names its API instance's reply channel.
        void queues.findJob(completionId).then((job) => redis.spublish(job?.data.replyTo.channel ?? '', message(completionId)));
      }
    });
  }

  it('ends the stream with an error when a sequence number is skipped', async () => {
    const reading = await streamWithInjected((completionId) =>
      JSON.stringify({ type: 'output', completionId, attempt: 1, seq: 100_000, parts: [{ type: 'text', choice: 0, text: ' injected' }] }),
    );
    expect(reading.sawDone).toBe(true);
    expect(reading.content).not.toContain('injected');
    const last = reading.events.at(-1) as unknown as { error: { message: string } };
    assertMatchesSchema('ErrorResponse', last);
    expect(last.error.message).toMatch(/lost in transit/);
  });

  it('drops an event delivered a second time and answers in full', async () => {
    const plain = await readStream(await postChat(stack.apiUrls[0], stack.apiKey, longRequest(stack.model, { stream: true, max_tokens: 1000 })));
    // Sequence number 1 is the first output, passed on before the client saw any chunk with an id.
    const reading = await streamWithInjected(
      (completionId) => JSON.stringify({ type: 'output', completionId, attempt: 1, seq: 1, parts: [{ type: 'text', choice: 0, text: ' injected' }] }),
      1000,
    );
    expect(reading.sawDone).toBe(true);
    expect(reading.events.some((event) => 'error' in event)).toBe(false);
    expect(reading.content).toBe(plain.content);
    expect(reading.content.length).toBeGreaterThan(0);
  });

  it('ends the stream with an error when an event cannot be read', async () => {
    const reading = await streamWithInjected((completionId) => `{"type": "output", "completionId": "${completionId}", "attempt": "one"`);
    expect(reading.sawDone).toBe(true);
    const last = reading.events.at(-1) as unknown as { error: { message: string } };
    assertMatchesSchema('ErrorResponse', last);
  });
});
