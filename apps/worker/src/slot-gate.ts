/**
 * The engine's sequences, shared by the jobs of the model's shared queue and of this worker's own
 * queue (prefix-cache affinity), which BullMQ takes on separate consumers: each may take a job
 * while the other holds every sequence. Such a job waits here for the next free one, rather than
 * reach an engine with none. Waiting jobs get sequences in the order they were queued, whichever
 * queue they came from: preferring the own queue let a stream of later affinity jobs pass a shared
 * job taken earlier, which then waited one whole answer more (and, taken, no other worker could run it).
 */
export class SlotGate {
  private free: number;
  private readonly waiting: Array<{ queuedAt: number; grant: () => void }> = [];

  constructor(slots: number) {
    this.free = slots;
  }

  /** Resolves with the release once a sequence is this job's (`queuedAt`: when it was queued); rejects if `signal` aborts first. */
  acquire(queuedAt: number, signal: AbortSignal): Promise<() => void> {
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    if (this.free > 0) {
      this.free--;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve, reject) => {
      const waiter = {
        queuedAt,
        grant: () => {
          signal.removeEventListener('abort', onAbort);
          resolve(this.releaser());
        },
      };
      const onAbort = () => {
        this.waiting.splice(this.waiting.indexOf(waiter), 1);
        reject(signal.reason as Error);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      let next = 0;
      for (let index = 1; index < this.waiting.length; index++) {
        if (this.waiting[index].queuedAt < this.waiting[next].queuedAt) next = index;
      }
      const [waiter] = this.waiting.splice(next, 1);
      if (waiter) waiter.grant();
      else this.free++;
    };
  }
}
