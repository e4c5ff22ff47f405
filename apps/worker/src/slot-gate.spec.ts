import { SlotGate } from './slot-gate';

describe('SlotGate', () => {
  const never = new AbortController().signal;

  it('grants as many sequences as the engine has at once, and the next when one is released', async () => {
    const gate = new SlotGate(2);
    const [first] = await Promise.all([gate.acquire(false, never), gate.acquire(true, never)]);
    let third = false;
    const waiting = gate.acquire(false, never).then((release) => ((third = true), release));
    await Promise.resolve();
    expect(third).toBe(false);
    first();
    first(); // a second release of the same sequence frees nothing more
    await waiting;
    expect(third).toBe(true);
  });

  it("gives a released sequence to a job of the worker's own queue before an earlier shared one", async () => {
    const gate = new SlotGate(1);
    const held = await gate.acquire(false, never);
    const order: string[] = [];
    const shared = gate.acquire(false, never).then((release) => (order.push('shared'), release));
    const own = gate.acquire(true, never).then((release) => (order.push('own'), release));
    held();
    (await own)();
    await shared;
    expect(order).toEqual(['own', 'shared']);
  });

  it('drops a waiting job whose signal aborts, without losing the sequence', async () => {
    const gate = new SlotGate(1);
    const held = await gate.acquire(false, never);
    const cancelled = new AbortController();
    const waiting = gate.acquire(true, cancelled.signal);
    cancelled.abort(new Error('cancelled'));
    await expect(waiting).rejects.toThrow('cancelled');
    held();
    await expect(gate.acquire(false, AbortSignal.timeout(1000))).resolves.toBeInstanceOf(Function);
  });
});
