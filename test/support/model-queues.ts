import { completionQueueName, completionQueuePrefix, workerQueueName } from '@app/contracts';
import type { CompletionJobData } from '@app/contracts';
import { Queue } from 'bullmq';
import type { ConnectionOptions, Job } from 'bullmq';

/**
 * A model's shared queue and each worker's own (where prefix-cache affinity places a
 * conversation's turns): a job is on exactly one of them.
 */
export class ModelQueues {
  readonly queues: Array<Queue<CompletionJobData>>;

  constructor(connection: ConnectionOptions, model: string, workerIds: readonly string[]) {
    this.queues = [completionQueueName(model), ...workerIds.map((id) => workerQueueName(model, id))].map(
      (name) => new Queue<CompletionJobData>(name, { connection, prefix: completionQueuePrefix(model) }),
    );
  }

  async findJob(id: string): Promise<Job<CompletionJobData> | undefined> {
    return (await Promise.all(this.queues.map((queue) => queue.getJob(id)))).find((job) => job !== undefined);
  }

  async close(): Promise<void> {
    await Promise.all(this.queues.map((queue) => queue.close()));
  }
}
