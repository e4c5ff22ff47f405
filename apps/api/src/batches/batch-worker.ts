import type { Provider } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { BATCH_QUEUE_NAME, BATCH_QUEUE_PREFIX } from '@app/contracts';
import { closeRedis, createRedisConnection, QUEUE_WORKER_RETRY_DELAY_MS, redisTarget } from '@app/redis';
import { Worker } from 'bullmq';
import type { Processor } from 'bullmq';
import { API_INSTANCE_ID } from '../redis/api-redis.module';
import type { BatchJobData } from './batch-queue';

/** A coordinating instance that dies hands its batches to another within about this long. */
const COORDINATOR_LOCK_MS = 5000;

/** Whether this process coordinates batches: BATCH_COORDINATOR in an API instance, always in the coordinator's own. */
export const COORDINATE_BATCHES = Symbol('COORDINATE_BATCHES');

/** Starts the BullMQ Worker that takes batch steps (see BatchCoordinator). */
export const START_BATCH_WORKER = Symbol('START_BATCH_WORKER');

export interface RunningBatchWorker {
  worker: Worker<BatchJobData>;
  /** Lets the running steps finish, then closes the worker's connection. */
  close(): Promise<void>;
}

export type StartBatchWorker = (step: Processor<BatchJobData>) => RunningBatchWorker;

/** The worker on a blocking connection of its own, named after this process so operators see who coordinates a batch. */
function startBatchWorker(env: ApiEnv, instanceId: string, step: Processor<BatchJobData>): RunningBatchWorker {
  const blocking = createRedisConnection(redisTarget(env), 'blocking', `api-batches:${instanceId}`);
  const worker = new Worker<BatchJobData>(BATCH_QUEUE_NAME, step, {
    connection: blocking,
    prefix: BATCH_QUEUE_PREFIX,
    // Recorded on each batch's job as processedBy: which instance coordinates it.
    name: instanceId,
    concurrency: 8,
    lockDuration: COORDINATOR_LOCK_MS,
    stalledInterval: COORDINATOR_LOCK_MS,
    // A step that dies with its instance is simply taken again; its work is repeatable.
    maxStalledCount: 1000,
    runRetryDelay: QUEUE_WORKER_RETRY_DELAY_MS,
  });
  return {
    worker,
    close: async () => {
      await worker.close();
      await closeRedis(blocking);
    },
  };
}

/** @param coordinates whether this process takes batch steps. */
export const batchWorkerProviders = (coordinates: (env: ApiEnv) => boolean): Provider[] => [
  { provide: COORDINATE_BATCHES, inject: [ApiEnv], useFactory: coordinates },
  {
    provide: START_BATCH_WORKER,
    inject: [ApiEnv, API_INSTANCE_ID],
    useFactory:
      (env: ApiEnv, instanceId: string): StartBatchWorker =>
      (step) =>
        startBatchWorker(env, instanceId, step),
  },
];
