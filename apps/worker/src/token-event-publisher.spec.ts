import { decodeTokenEvent } from '@app/contracts';
import type { TokenEvent } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import { OUTPUT_COALESCE_MS, TokenEventPublisher } from './token-event-publisher';

/** A Redis stand-in that records what is published and says how many subscribers heard it. */
function recorder(receivers = 1) {
  const sent: Array<{ channel: string; event: TokenEvent }> = [];
  const redis = {
    spublish: (channel: string, message: string) => {
      sent.push({ channel, event: decodeTokenEvent(message) });
      return Promise.resolve(receivers);
    },
  } as unknown as RedisClient;
  return { redis, sent };
}

const replyTo = { channel: 'completion-replies:api-1', stopWhenUnheard: true };
const usage = { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 };

describe('TokenEventPublisher', () => {
  afterEach(() => jest.useRealTimers());

  it('numbers events in order, names the completion, and batches output that comes close together', async () => {
    jest.useFakeTimers();
    const { redis, sent } = recorder();
    const publisher = new TokenEventPublisher(redis, 'chatcmpl-1', replyTo, 2);
    publisher.started('w1');
    publisher.write({ type: 'text', choice: 0, text: 'Once' }); // the first goes out at once
    publisher.write({ type: 'text', choice: 0, text: ' upon' });
    publisher.write({ type: 'text', choice: 0, text: ' a' });
    publisher.write({ type: 'tool_call', choice: 0, index: 0, id: 'call_1', name: 'f', arguments: '{' });
    publisher.write({ type: 'tool_call', choice: 0, index: 0, arguments: '}' });
    await jest.advanceTimersByTimeAsync(OUTPUT_COALESCE_MS);
    await publisher.finish({ type: 'end', finishReason: 'tool_calls', usage });

    expect(sent.every(({ channel }) => channel === replyTo.channel)).toBe(true);
    expect(sent.map(({ event }) => [event.seq, event.type, event.attempt, event.completionId])).toEqual([
      [0, 'started', 2, 'chatcmpl-1'],
      [1, 'output', 2, 'chatcmpl-1'],
      [2, 'output', 2, 'chatcmpl-1'],
      [3, 'end', 2, 'chatcmpl-1'],
    ]);
    const batched = sent[2].event;
    expect(batched.type === 'output' && batched.parts).toEqual([
      { type: 'text', choice: 0, text: ' upon a' },
      { type: 'tool_call', choice: 0, index: 0, id: 'call_1', name: 'f', arguments: '{}' },
    ]);
  });

  it('stops an interactive generation whose output reaches nobody, and says so at the end', async () => {
    const { redis } = recorder(0);
    const stopped = jest.fn();
    const publisher = new TokenEventPublisher(redis, 'chatcmpl-1', replyTo, 1, stopped);
    publisher.write({ type: 'text', choice: 0, text: 'x' });
    await expect(publisher.finish({ type: 'end', finishReason: 'stop', usage })).rejects.toThrow(/no subscriber/);
    expect(stopped).toHaveBeenCalledTimes(1);
  });

  it('keeps a batch reply going when nobody listens (stopWhenUnheard false)', async () => {
    const { redis } = recorder(0);
    const stopped = jest.fn();
    const publisher = new TokenEventPublisher(redis, 'chatcmpl-1', { ...replyTo, stopWhenUnheard: false }, 1, stopped);
    publisher.write({ type: 'text', choice: 0, text: 'x' });
    await publisher.finish({ type: 'end', finishReason: 'stop', usage });
    expect(stopped).not.toHaveBeenCalled();
  });
});
