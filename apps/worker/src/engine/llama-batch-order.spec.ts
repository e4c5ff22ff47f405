import type { LlamaContext } from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import { orderBatchesBySequence, SequenceOrderedQueue } from './llama-batch-order';

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

describe('orderBatchesBySequence', () => {
  const contextWith = (internals: object) => internals as unknown as LlamaContext;

  it('swaps an empty queue of pending decodes for an ordered one', () => {
    const context = { _queuedDecodes: [] };
    expect(orderBatchesBySequence(contextWith(context))).toBe(true);
    expect(context._queuedDecodes).toBeInstanceOf(SequenceOrderedQueue);
  });

  it.each([
    ['no such queue', {}],
    ['a queue already in use', { _queuedDecodes: [{ sequenceId: 1 }] }],
    ['something else under that name', { _queuedDecodes: new Map() }],
  ])('leaves a context alone that has %s', (_, internals) => {
    const before = { ...internals };
    expect(orderBatchesBySequence(contextWith(internals))).toBe(false);
    expect(internals).toEqual(before);
  });
});
