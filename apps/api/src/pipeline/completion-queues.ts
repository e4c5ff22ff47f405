import { Inject, Injectable } from '@nestjs/common';
import type { OnApplicationShutdown } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { completionQueueName, completionQueuePrefix, expressQueueName, workerQueueName } from '@app/contracts';
import type { CompletionJobData, CompletionResult } from '@app/contracts';
import { Queue } from 'bullmq';
import type { RedisClient } from '@app/redis';
import { COMMANDS_REDIS } from '../redis/api-redis.module';

export type CompletionQueue = Queue<CompletionJobData, CompletionResult>;

const IN_PROGRESS_STATES = new Set(['waiting', 'active', 'delayed', 'prioritized', 'waiting-children']);

/** Whether a job in this state (`Queue.getJobState`) may still run and produce events. */
export const isInProgress = (state: string): boolean => IN_PROGRESS_STATES.has(state);

/** Finished jobs stay for operators to inspect, bounded by age and count. */
const RETENTION = {
  removeOnComplete: { age: 60 * 60, count: 1000 },
  removeOnFail: { age: 24 * 60 * 60, count: 5000 },
};

/**
 * One queue per model, all sharing the instance's command connection: the configured models'
 * from the start, a live model's when its first request comes; and each worker's own queue
 * (prefix-cache affinity) once something places a job there or shows it.
 */
@Injectable()
export class CompletionQueues implements OnApplicationShutdown {
  private readonly queues = new Map<string, CompletionQueue>();
  private readonly workerQueues = new Map<string, CompletionQueue>();
  private readonly addedListeners: Array<(queue: CompletionQueue) => void> = [];

  constructor(
    env: ApiEnv,
    @Inject(COMMANDS_REDIS) private readonly connection: RedisClient,
  ) {
    for (const model of env.MODELS) this.forModel(model);
  }

  get models(): string[] {
    return [...this.queues.keys()];
  }

  /** The model's queue, opened on first use. Callers check first that the model is served. */
  forModel(model: string): CompletionQueue {
    let queue = this.queues.get(model);
    if (!queue) {
      queue = this.open(completionQueueName(model), model);
      this.queues.set(model, queue);
      for (const listener of this.addedListeners) listener(queue);
    }
    return queue;
  }

  /**
   * A worker's own queue of the model (prefix-cache affinity), opened on first use. Kept open for
   * the process's life: a job placed there may still be moved or withdrawn after its worker left.
   */
  forWorker(model: string, workerId: string): CompletionQueue {
    return this.openKept(workerQueueName(model, workerId), model);
  }

  private openKept(name: string, model: string): CompletionQueue {
    let queue = this.workerQueues.get(name);
    if (!queue) {
      queue = this.open(name, model);
      this.workerQueues.set(name, queue);
    }
    return queue;
  }

  /** Whether models have an express lane: FAIR_SHARE_EXPRESS, which works only with FAIR_SHARE. */
  static expressLaneOn(env: { FAIR_SHARE: boolean; FAIR_SHARE_EXPRESS: boolean }): boolean {
    return env.FAIR_SHARE && env.FAIR_SHARE_EXPRESS;
  }

  /** The model's express lane (FAIR_SHARE_EXPRESS), opened on first use and kept, as a worker's queue is. */
  forExpress(model: string): CompletionQueue {
    return this.openKept(expressQueueName(model), model);
  }

  /** Tells `listener` of every model queue opened from now on (Bull Board shows them). */
  onQueueAdded(listener: (queue: CompletionQueue) => void): void {
    this.addedListeners.push(listener);
  }

  private open(name: string, model: string): CompletionQueue {
    return new Queue<CompletionJobData, CompletionResult>(name, {
      connection: this.connection,
      prefix: completionQueuePrefix(model),
      defaultJobOptions: { ...RETENTION, attempts: 1 },
    });
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([...this.queues.values(), ...this.workerQueues.values()].map((queue) => queue.close()));
  }
}
