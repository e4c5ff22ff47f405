import { Inject, Injectable } from '@nestjs/common';
import type { OnApplicationShutdown } from '@nestjs/common';
import { BATCH_QUEUE_NAME, BATCH_QUEUE_PREFIX, BatchJobName } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import { Queue } from 'bullmq';
import { COMMANDS_REDIS } from '../redis/api-redis.module';

export interface BatchJobData {
  batchId: string;
}

/** The queue that carries one coordination job per batch (see BatchCoordinator). */
@Injectable()
export class BatchQueue implements OnApplicationShutdown {
  readonly queue: Queue<BatchJobData>;

  constructor(@Inject(COMMANDS_REDIS) connection: RedisClient) {
    this.queue = new Queue<BatchJobData>(BATCH_QUEUE_NAME, {
      connection,
      prefix: BATCH_QUEUE_PREFIX,
      defaultJobOptions: {
        removeOnComplete: { age: 24 * 3600, count: 1000 },
        removeOnFail: { age: 7 * 24 * 3600 },
        // A step that fails (Redis or storage away for a moment) is taken again: a batch does not
        // stop on a blip. Its ticks (moveToDelayed) use no attempts; about 5 h of failing steps do.
        attempts: 10_000,
        backoff: { type: 'fixed', delay: 2000 },
      },
    });
  }

  /** Queues a batch's coordination job; its id is the batch id, so starting it twice queues it once. */
  async start(batchId: string): Promise<void> {
    await this.queue.add(BatchJobName.Batch, { batchId }, { jobId: batchId });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.queue.close();
  }
}
