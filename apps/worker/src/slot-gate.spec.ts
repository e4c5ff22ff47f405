import { BATCH_PRIORITY } from '@app/contracts';
import { SlotGate } from './slot-gate';

describe('SlotGate', () => {
  const never = new AbortController().signal;
  const at = (queuedAt: number, priority = 0) => ({ priority, queuedAt });

  it('grants as many sequences as the engine has at once, and the next when one is released', async () => {
    const gate = new SlotGate(2);
    const [first] = await Promise.all([gate.acquire(at(1), never), gate.acquire(at(2), never)]);
    let third = false;
    const waiting = gate.acquire(at(3), never).then((release) => ((third = true), release));
    await Promise.resolve();
    expect(third).toBe(false);
    first();
    first(); // a second release of the same sequence frees nothing more
    await waiting;
    expect(third).toBe(true);
  });

  // Each pair reaches the gate in this order while its one sequence is held; `first` must get it.
  it.each([
    // Taken from the worker's own queue first, though queued after the shared job behind it.
    { case: 'the job queued first, not the one that reached the gate first', arrives: [at(300), at(200)], first: 1 },
    // A batch line taken earlier waits for a later interactive job.
    { case: "the queue's priority number before the time queued", arrives: [at(150, BATCH_PRIORITY), at(300)], first: 1 },
  ])('gives a released sequence by $case', async ({ arrives, first }) => {
    const gate = new SlotGate(1);
    const held = await gate.acquire(at(100), never);
    const order: number[] = [];
    const waiting = arrives.map((place, index) => gate.acquire(place, never).then((release) => (order.push(index), release)));
    held();
    (await waiting[first])();
    await waiting[1 - first];
    expect(order).toEqual([first, 1 - first]);
  });

  it('drops a waiting job whose signal aborts, without losing the sequence', async () => {
    const gate = new SlotGate(1);
    const held = await gate.acquire(at(1), never);
    const cancelled = new AbortController();
    const waiting = gate.acquire(at(2), cancelled.signal);
    cancelled.abort(new Error('cancelled'));
    await expect(waiting).rejects.toThrow('cancelled');
    held();
    await expect(gate.acquire(at(3), AbortSignal.timeout(1000))).resolves.toBeInstanceOf(Function);
  });
});
