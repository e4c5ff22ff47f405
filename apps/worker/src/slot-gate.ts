/**
 * The engine's sequences, shared by the jobs of the model's shared queue and of this worker's own
 * queue (prefix-cache affinity), which BullMQ takes on separate consumers: each may take a job
 * while the other holds every sequence. Such a job waits here for the next free one, rather than
 * reach an engine with none; jobs of the own queue go first, for they were sent here to use this
 * worker's cache.
 */
export class SlotGate {
  private free: number;
  private readonly waiting: Array<{ own: boolean; grant: () => void }> = [];

  constructor(slots: number) {
    this.free = slots;
  }

  /** Resolves with the release once a sequence is this job's; rejects if `signal` aborts first. */
  acquire(own: boolean, signal: AbortSignal): Promise<() => void> {
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    if (this.free > 0) {
      this.free--;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve, reject) => {
      const waiter = {
        own,
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
      const next = this.waiting.findIndex(({ own }) => own);
      const [waiter] = this.waiting.splice(next >= 0 ? next : 0, 1);
      if (waiter) waiter.grant();
      else this.free++;
    };
  }
}
