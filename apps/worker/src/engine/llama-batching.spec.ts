import type { LlamaContext, LlamaContextSequence } from 'node-llama-cpp' with { 'resolution-mode': 'import' };
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
  type Request = { sequenceId: number; afterBatchAction?: (length: number) => unknown };

  /** A stand-in with the members of node-llama-cpp's context and sequences that it reaches. */
  function fakes() {
    const requests: Request[] = [];
    const context = {
      _queuedDecodes: [] as Array<{ sequenceId: number }>,
      _decodeTokens(this: { _queuedDecodes: Array<{ sequenceId: number }> }, request: Request) {
        requests.push(request);
        this._queuedDecodes.push({ sequenceId: request.sequenceId });
        return Promise.resolve(request.sequenceId);
      },
    };
    const erasing = { release: () => undefined as void };
    const sequence = (id: number) => ({
      _sequenceId: id,
      _eraseContextTokenRanges: () => new Promise<void>((resolve) => (erasing.release = resolve)),
      takeCheckpoint: () => Promise.resolve(),
      _takeNamedCheckpoint: () => Promise.resolve(),
    });
    const sequences = [sequence(0), sequence(1)];
    const share = () => shareDecodeSteps(context as unknown as LlamaContext, sequences as unknown as LlamaContextSequence[]);
    return { context, sequences, requests, erasing, share };
  }

  it('keeps the pending decodes in sequence-id order', async () => {
    const { context, share } = fakes();
    expect(share()).toBe(true);
    await Promise.all([3, 0, 2].map((sequenceId) => context._decodeTokens({ sequenceId })));
    expect(context._queuedDecodes.map(({ sequenceId }) => sequenceId)).toEqual([0, 2, 3]);
  });

  it('after a batch, waits one turn when a decode is queued already, once per batch', async () => {
    const { context, requests, share } = fakes();
    expect(share()).toBe(true);
    const seen: string[] = [];
    await context._decodeTokens({ sequenceId: 0, afterBatchAction: (length) => seen.push(`own ${length}`) });
    await context._decodeTokens({ sequenceId: 1 });
    setImmediate(() => seen.push('a turn'));
    // Both are queued (a late one is waiting): the first action waits a turn, the second does not.
    await requests[0].afterBatchAction?.(17);
    await requests[1].afterBatchAction?.(3);
    expect(seen).toEqual(['own 17', 'a turn']);

    // Nothing queued: no wait, so the loop can end and let go of the context.
    context._queuedDecodes.splice(0, 2);
    setImmediate(() => seen.push('another turn'));
    await requests[0].afterBatchAction?.(18);
    expect(seen).toEqual(['own 17', 'a turn', 'own 18']);
  });

  it("holds the other sequences' decodes while one waits to erase, but not its own", async () => {
    const { context, sequences, erasing, share } = fakes();
    expect(share()).toBe(true);
    const erased = sequences[1]._eraseContextTokenRanges();
    const other = context._decodeTokens({ sequenceId: 0 });
    await expect(context._decodeTokens({ sequenceId: 1 })).resolves.toBe(1);
    await new Promise(setImmediate);
    expect(context._queuedDecodes.map(({ sequenceId }) => sequenceId)).toEqual([1]);
    erasing.release();
    await erased;
    await expect(other).resolves.toBe(0);
    expect(context._queuedDecodes.map(({ sequenceId }) => sequenceId)).toEqual([0, 1]);
  });

  it.each([
    ['no such queue', { _queuedDecodes: undefined }],
    ['a queue already in use', { _queuedDecodes: [{ sequenceId: 1 }] }],
    ['something else under that name', { _queuedDecodes: new Map() }],
    ['no way to queue a decode', { _decodeTokens: undefined }],
  ])('leaves a context alone that has %s', (_, change) => {
    const { context, sequences, share } = fakes();
    Object.assign(context, change);
    const before = { ...context };
    const eraseBefore = sequences[0]._eraseContextTokenRanges;
    expect(share()).toBe(false);
    expect(context).toEqual(before);
    expect(sequences[0]._eraseContextTokenRanges).toBe(eraseBefore);
  });

  it('leaves everything alone when a sequence lacks a method it would wrap', () => {
    const { context, sequences, share } = fakes();
    const [first] = sequences as Array<Partial<(typeof sequences)[number]>>;
    delete first._takeNamedCheckpoint;
    const eraseBefore = sequences[1]._eraseContextTokenRanges;
    expect(share()).toBe(false);
    expect(Array.isArray(context._queuedDecodes) && !(context._queuedDecodes instanceof SequenceOrderedQueue)).toBe(true);
    expect(sequences[1]._eraseContextTokenRanges).toBe(eraseBefore);
  });
});
