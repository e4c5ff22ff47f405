import { Inject, Injectable } from '@nestjs/common';
import type { OnApplicationShutdown } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { QUEUE_PREFIX, completionQueueName } from '@app/contracts';
import type { CompletionJobData, CompletionResult } from '@app/contracts';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { COMMANDS_REDIS } from './api-redis.providers';

export type CompletionQueue = Queue<CompletionJobData, CompletionResult>;

/** Finished jobs stay for operators to inspect, bounded by age and count. */
const RETENTION = {
  removeOnComplete: { age: 60 * 60, count: 1000 },
  removeOnFail: { age: 24 * 60 * 60, count: 5000 },
};

/** One queue per configured model, all sharing the instance's command connection. */
@Injectable()
export class CompletionQueues implements OnApplicationShutdown {
  private readonly queues: Map<string, CompletionQueue>;

  constructor(env: ApiEnv, @Inject(COMMANDS_REDIS) connection: Redis) {
    this.queues = new Map(
      env.MODELS.map((model) => [
        model,
        new Queue<CompletionJobData, CompletionResult>(completionQueueName(model), {
          connection,
          prefix: QUEUE_PREFIX,
          defaultJobOptions: { ...RETENTION, attempts: 1 },
        }),
      ]),
    );
  }

  get models(): string[] {
    return [...this.queues.keys()];
  }

  forModel(model: string): CompletionQueue | undefined {
    return this.queues.get(model);
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([...this.queues.values()].map((queue) => queue.close()));
  }
}
