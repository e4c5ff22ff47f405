import { decodeTokenEvent, eventBatchElements, toTokenEvent } from '@app/contracts';
import type { TokenEvent } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import { ReplyBatcher } from './reply-batcher';
import { OUTPUT_COALESCE_MS, TokenEventPublisher } from './token-event-publisher';

/** A Redis stand-in that records what is published and says how many subscribers heard it. */
function recorder(receivers = 1) {
  const sent: Array<{ channel: string; event: TokenEvent }> = [];
  const redis = {
    spublish: (channel: string, message: string) => {
      for (const element of eventBatchElements(message)) sent.push({ channel, event: toTokenEvent(element) });
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
    jest.useFakeTimers({ doNotFake: ['setImmediate'] });
    const { redis, sent } = recorder();
    const publisher = new TokenEventPublisher(redis, new ReplyBatcher(redis), { id: 'chatcmpl-1', replyTo }, 2);
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
    const publisher = new TokenEventPublisher(redis, new ReplyBatcher(redis), { id: 'chatcmpl-1', replyTo }, 1, stopped);
    publisher.write({ type: 'text', choice: 0, text: 'x' });
    await expect(publisher.finish({ type: 'end', finishReason: 'stop', usage })).rejects.toThrow(/no subscriber/);
    expect(stopped).toHaveBeenCalledTimes(1);
  });

  it('sends one final event: an error found after the end went out fails the job, not the stream again', async () => {
    const { redis, sent } = recorder(0);
    const publisher = new TokenEventPublisher(redis, new ReplyBatcher(redis), { id: 'chatcmpl-1', replyTo }, 1);
    publisher.write({ type: 'text', choice: 0, text: 'x' });
    await expect(publisher.finish({ type: 'end', finishReason: 'stop', usage })).rejects.toThrow(/no subscriber/);
    await expect(publisher.finish({ type: 'error', code: 'engine_error', message: 'x' })).rejects.toThrow(/no subscriber/);
    expect(sent.map(({ event }) => event.type)).toEqual(['output', 'end']);
  });

  it('keeps a batch reply going when nobody listens (stopWhenUnheard false)', async () => {
    const { redis } = recorder(0);
    const stopped = jest.fn();
    const publisher = new TokenEventPublisher(
      redis,
      new ReplyBatcher(redis),
      { id: 'chatcmpl-1', replyTo: { ...replyTo, stopWhenUnheard: false } },
      1,
      stopped,
    );
    publisher.write({ type: 'text', choice: 0, text: 'x' });
    await publisher.finish({ type: 'end', finishReason: 'stop', usage });
    expect(stopped).not.toHaveBeenCalled();
  });

  it('logs every event of a resumable reply in publish order, and stores the whole answer at the end', async () => {
    const commands: string[][] = [];
    const redis = {
      spublish: (_channel: string, message: string) => {
        for (const element of eventBatchElements(message)) commands.push(['spublish', toTokenEvent(element).type]);
        return Promise.resolve(1);
      },
      xadd: (key: string, ...args: Array<string | number>) => {
        commands.push(['xadd', key, decodeTokenEvent(String(args.at(-1))).type, ...args.slice(0, 3).map(String)]);
        return Promise.resolve('1-0');
      },
      pexpire: (key: string, ms: number) => Promise.resolve(commands.push(['pexpire', key, String(ms)]) && 1),
      set: (key: string, value: string, ...args: Array<string | number>) => Promise.resolve(commands.push(['set', key, value, ...args.map(String)]) && 'OK'),
    } as unknown as RedisClient;
    const log = { key: '{completion:c}:events', keepMs: 600_000, maxEvents: 1000 };
    const publisher = new TokenEventPublisher(
      redis,
      new ReplyBatcher(redis),
      { id: 'c', replyTo: { ...replyTo, stopWhenUnheard: false, log }, store: { key: '{completion:c}:answer', ttlMs: 5000 } },
      1,
    );
    publisher.started('w1');
    publisher.write({ type: 'text', choice: 0, text: 'Hel' });
    publisher.write({ type: 'text', choice: 0, text: 'lo' });
    await publisher.finish({ type: 'end', finishReason: 'stop', usage });

    const logged = commands.filter(([name]) => name === 'xadd');
    expect(logged.map(([, key, type, ...trim]) => [key, type, ...trim])).toEqual([
      [log.key, 'started', 'MAXLEN', '~', '1000'],
      [log.key, 'output', 'MAXLEN', '~', '1000'],
      [log.key, 'output', 'MAXLEN', '~', '1000'],
      [log.key, 'end', 'MAXLEN', '~', '1000'],
    ]);
    // Its expiry is set with the first event and pushed back by the final one, not once per event.
    expect(commands.filter(([name]) => name === 'pexpire')).toEqual([
      ['pexpire', log.key, '600000'],
      ['pexpire', log.key, '600000'],
    ]);
    const stored = commands.find(([name]) => name === 'set');
    expect(stored?.slice(0, 2)).toEqual(['set', '{completion:c}:answer']);
    expect(JSON.parse(stored?.[2] ?? '')).toEqual({ parts: [{ type: 'text', choice: 0, text: 'Hello' }], finishReason: 'stop', usage });
    expect(stored?.slice(3)).toEqual(['PX', '5000']);
  });

  it("pushes a resumable log's expiry back while events flow, at most once a second or a tenth of its window", async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate'] });
    const expiries: number[] = [];
    const redis = {
      spublish: () => Promise.resolve(1),
      xadd: () => Promise.resolve('1-0'),
      pexpire: (_key: string, ms: number) => Promise.resolve(expiries.push(ms) && 1),
    } as unknown as RedisClient;
    const expiriesOver = async (keepMs: number, gapsMs: number[]): Promise<number> => {
      expiries.length = 0;
      const log = { key: 'log', keepMs, maxEvents: 100 };
      const publisher = new TokenEventPublisher(redis, new ReplyBatcher(redis), { id: 'c', replyTo: { ...replyTo, stopWhenUnheard: false, log } }, 1);
      for (const gap of gapsMs) {
        await jest.advanceTimersByTimeAsync(gap);
        publisher.write({ type: 'text', choice: 0, text: 'x' });
      }
      await publisher.finish({ type: 'end', finishReason: 'stop', usage });
      expect(new Set(expiries)).toEqual(new Set([keepMs]));
      return expiries.length;
    };
    // Outputs at 0, 600, 1200 and 1800 ms: set at 0, pushed back at 1200, and by the end.
    await expect(expiriesOver(600_000, [0, 600, 600, 600])).resolves.toBe(3);
    // A 2 s window is pushed back every 200 ms: at 0, 250 and 500, and by the end.
    await expect(expiriesOver(2000, [0, 250, 250])).resolves.toBe(4);
  });

  it('stops a resumable generation once its lease is gone (no client for the grace period)', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate'] });
    let leaseAlive = 1;
    const redis = {
      spublish: () => Promise.resolve(0),
      xadd: () => Promise.resolve('1-0'),
      pexpire: () => Promise.resolve(1),
      exists: () => Promise.resolve(leaseAlive),
    } as unknown as RedisClient;
    const stopped = jest.fn();
    const log = { key: 'log', keepMs: 1000, maxEvents: 100 };
    const publisher = new TokenEventPublisher(
      redis,
      new ReplyBatcher(redis),
      { id: 'c', replyTo: { ...replyTo, stopWhenUnheard: false, log, leaseKey: 'lease' } },
      1,
      stopped,
    );
    publisher.started('w1');
    await jest.advanceTimersByTimeAsync(2000);
    expect(stopped).not.toHaveBeenCalled(); // nobody subscribed, but the lease lives
    leaseAlive = 0;
    await jest.advanceTimersByTimeAsync(600);
    expect(stopped).toHaveBeenCalledTimes(1);
    await expect(publisher.finish({ type: 'error', code: 'cancelled', message: 'x' })).rejects.toThrow(/grace period/);
  });
});
