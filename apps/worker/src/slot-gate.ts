/** Where a job stands in its queue: BullMQ's priority number (0 for the wait list; lower goes first) and when it was queued. */
export interface QueuePlace {
  priority: number;
  queuedAt: number;
}

/**
 * The engine's sequences, shared by the jobs of the model's shared queue and of this worker's own
 * queue (prefix-cache affinity), which BullMQ takes on separate consumers: each may take a job
 * while the other holds every sequence. Such a job waits here for the next free one, rather than
 * reach an engine with none. Waiting jobs get sequences in their queues' own order (priority
 * number, then the time queued), whichever queue they came from: preferring the own queue let a
 * stream of later affinity jobs pass a shared job taken earlier, which then waited one whole
 * answer more (and, taken, no other worker could run it).
 */
export class SlotGate {
  private free: number;
  private readonly waiting: Array<{ place: QueuePlace; grant: () => void }> = [];

  constructor(slots: number) {
    this.free = slots;
  }

  /** Resolves with the release once a sequence is this job's; rejects if `signal` aborts first. */
  acquire(place: QueuePlace, signal: AbortSignal): Promise<() => void> {
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    if (this.free > 0) {
      this.free--;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve, reject) => {
      const waiter = {
        place,
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
        if (goesBefore(this.waiting[index].place, this.waiting[next].place)) next = index;
      }
      const [waiter] = this.waiting.splice(next, 1);
      if (waiter) waiter.grant();
      else this.free++;
    };
  }
}

function goesBefore(a: QueuePlace, b: QueuePlace): boolean {
  return a.priority !== b.priority ? a.priority < b.priority : a.queuedAt < b.queuedAt;
}
