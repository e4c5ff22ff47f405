import type { CompletionJobData, TokenEvent } from '@app/contracts';
import type { JobsOptions } from 'bullmq';
import type { CompletionQueue } from './completion-queues';
import type { WaitingLimit } from './waiting-limit';

type JobOptions = JobsOptions & { jobId: string };

/**
 * One job's place: the model's shared queue, or first a chosen worker's own queue and then, if
 * that worker has not started it within `waitMs`, the shared queue. Moving is remove-then-add:
 * BullMQ removes a job only while no worker holds its lock, so a job is taken from the worker's
 * queue either by the worker (and runs there) or by the move (and runs elsewhere), never both.
 * Withdrawing and cancelling act on wherever the job is, after any move under way.
 */
export class PlacedJob {
  private current: CompletionQueue;
  private moving: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private started = false;
  /** Whether the job was moved from its worker's queue to the shared one. */
  movedToShared = false;

  constructor(
    private readonly waitingLimit: WaitingLimit,
    private readonly shared: CompletionQueue,
    private readonly chosen: CompletionQueue | undefined,
    private readonly waitMs: number,
    private readonly record: (event: TokenEvent) => void,
    /** Called once when the job no longer waits on its worker's queue: started, moved (true) or ended. */
    private onLeftWorkerQueue: (moved: boolean) => void = () => undefined,
  ) {
    this.current = chosen ?? shared;
  }

  /** Whether it goes to a worker's own queue first. */
  get onWorkerQueue(): boolean {
    return this.chosen !== undefined;
  }

  /** Adds the job; false when the model's queues were full (`limit` jobs wait, wherever they wait). */
  async add(name: string, data: CompletionJobData, options: JobOptions, limit: number): Promise<boolean> {
    const { chosen } = this;
    if (!chosen) return this.waitingLimit.add(this.shared, this.shared, name, data, options, limit);
    if (!(await this.waitingLimit.add(chosen, this.shared, name, data, options, limit))) return false;
    if (this.closed || this.started) return true;
    this.timer = setTimeout(() => {
      this.moving = this.moveToShared(chosen, name, data, options);
    }, this.waitMs);
    return true;
  }

  onEvent(event: TokenEvent): void {
    if (event.type === 'started') {
      this.started = true;
      clearTimeout(this.timer);
      this.leftWorkerQueue(false);
    }
    this.record(event);
  }

  /** Takes the job off its queue unless a worker is running it; true when no worker will. */
  async withdraw(completionId: string): Promise<boolean> {
    clearTimeout(this.timer);
    await this.moving;
    for (const queue of this.whereItMayBe()) {
      const removed = await queue.remove(completionId).catch(() => 0);
      if (removed === 1) return true;
      if ((await queue.getJobState(completionId)) === 'active') return false;
    }
    return true;
  }

  /** Best effort, in the background: no move from now on, and the job leaves whichever queue it waits in. */
  cancel(completionId: string): void {
    this.close();
    void this.moving.then(() => Promise.all(this.whereItMayBe().map((queue) => queue.remove(completionId)))).catch(() => undefined);
  }

  /**
   * A job still on its worker's queue may have been moved to the shared one by a surviving worker
   * (its worker died after starting it: see the worker's DeadWorkerQueues), so both are searched.
   */
  private whereItMayBe(): CompletionQueue[] {
    return this.current === this.shared ? [this.shared] : [this.current, this.shared];
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.leftWorkerQueue(false);
  }

  private leftWorkerQueue(moved: boolean): void {
    const notify = this.onLeftWorkerQueue;
    this.onLeftWorkerQueue = () => undefined;
    notify(moved);
  }

  private async moveToShared(chosen: CompletionQueue, name: string, data: CompletionJobData, options: JobOptions): Promise<void> {
    if (this.closed || this.started) return;
    const removed = await chosen.remove(options.jobId).catch(() => 0);
    // Its worker holds it (started, its event on the way), or it has gone (cancelled).
    if (removed !== 1 || this.closed) return;
    this.current = this.shared;
    this.movedToShared = true;
    this.leftWorkerQueue(true);
    // It was admitted already: the shared queue's depth limit does not refuse it now.
    await this.shared.add(name, data, options).catch(() => undefined); // lost with Redis: the start limit answers 503
  }
}
