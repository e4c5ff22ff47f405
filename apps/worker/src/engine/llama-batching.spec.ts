import type { LlamaContext } from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import { SequenceOrderedQueue, shareDecodeSteps } from './llama-batching';

describe('SequenceOrderedQueue', () => {
  const decode = (sequenceId: number, tag = '') => ({ sequenceId, tag });

  it('keeps pending decodes in sequence-id order whatever order they arrive in', () => {
    const queue = new SequenceOrderedQueue<ReturnType<typeof decode>>();
    for (const id of [7, 2, 4, 0, 1, 3, 6]) queue.push(decode(id));
    expect(queue.map(({ sequenceId }) => sequenceId)).toEqual([0, 1, 2, 3, 4, 6, 7]);
    expect(queue).toHaveLength(7);
  });

  it('puts a second decode of the same sequence after the first', () => {
    const queue = new SequenceOrderedQueue<ReturnType<typeof decode>>();
    queue.push(decode(3, 'first'), decode(1), decode(3, 'second'));
    expect(queue.map(({ sequenceId, tag }) => `${sequenceId}${tag}`)).toEqual(['1', '3first', '3second']);
  });

  it('still takes decodes out as node-llama-cpp does, and derives plain arrays', () => {
    const queue = new SequenceOrderedQueue<ReturnType<typeof decode>>();
    queue.push(decode(5), decode(2), decode(9));
    const removed = queue.splice(1, 1);
    expect(removed).toEqual([decode(5)]);
    expect(removed).not.toBeInstanceOf(SequenceOrderedQueue);
    queue.push(decode(4));
    expect([...queue].map(({ sequenceId }) => sequenceId)).toEqual([2, 4, 9]);
  });
});

describe('shareDecodeSteps', () => {
  const contextWith = (internals: object) => internals as unknown as LlamaContext;

  it('orders the pending decodes, and has the batch loop wait a turn after each batch', async () => {
    type Request = { sequenceId: number; afterBatchAction?: (length: number) => unknown };
    const requests: Request[] = [];
    const context = {
      _queuedDecodes: [],
      _decodeTokens(request: Request, mapper: unknown) {
        requests.push(request);
        return Promise.resolve(mapper);
      },
    };
    expect(shareDecodeSteps(contextWith(context))).toBe(true);
    expect(context._queuedDecodes).toBeInstanceOf(SequenceOrderedQueue);

    const seen: string[] = [];
    await expect(context._decodeTokens({ sequenceId: 4, afterBatchAction: (length) => seen.push(`own ${length}`) }, 'mapper')).resolves.toBe('mapper');
    await context._decodeTokens({ sequenceId: 5 }, 'mapper');
    expect(requests.map(({ sequenceId }) => sequenceId)).toEqual([4, 5]);

    // What the loop awaits after a batch: the sequence's own action, then the next turn.
    setImmediate(() => seen.push('a turn'));
    await requests[0].afterBatchAction?.(17);
    await requests[1].afterBatchAction?.(3);
    expect(seen).toEqual(['own 17', 'a turn']);
  });

  const decodeTokens = () => Promise.resolve();
  it.each([
    ['no such queue', { _decodeTokens: decodeTokens }],
    ['a queue already in use', { _queuedDecodes: [{ sequenceId: 1 }], _decodeTokens: decodeTokens }],
    ['something else under that name', { _queuedDecodes: new Map(), _decodeTokens: decodeTokens }],
    ['no way to queue a decode', { _queuedDecodes: [] }],
  ])('leaves a context alone that has %s', (_, internals) => {
    const before = { ...internals };
    expect(shareDecodeSteps(contextWith(internals))).toBe(false);
    expect(internals).toEqual(before);
  });
});
