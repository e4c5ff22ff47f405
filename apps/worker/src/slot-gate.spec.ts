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

  it('gives a released sequence to the job queued first, not the one that reached the gate first', async () => {
    const gate = new SlotGate(1);
    const held = await gate.acquire(at(100), never);
    const order: string[] = [];
    // Taken from the worker's own queue first, though queued after the shared job behind it.
    const later = gate.acquire(at(300), never).then((release) => (order.push('queued later'), release));
    const earlier = gate.acquire(at(200), never).then((release) => (order.push('queued earlier'), release));
    held();
    (await earlier)();
    await later;
    expect(order).toEqual(['queued earlier', 'queued later']);
  });

  it("goes by the queue's priority number before the time queued: a batch line taken earlier waits for a later interactive job", async () => {
    const gate = new SlotGate(1);
    const held = await gate.acquire(at(100), never);
    const order: string[] = [];
    const batchLine = gate.acquire(at(150, 2 ** 21 - 1), never).then((release) => (order.push('batch line'), release));
    const interactive = gate.acquire(at(300), never).then((release) => (order.push('interactive'), release));
    held();
    (await interactive)();
    await batchLine;
    expect(order).toEqual(['interactive', 'batch line']);
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
