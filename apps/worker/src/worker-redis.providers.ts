import type { Provider } from '@nestjs/common';
import type { WorkerEnv } from '@app/config';
import { redisConnectionProviders, redisTarget } from '@app/redis';

/** Publishes token events; fails fast while Redis is away. */
export const PUBLISHER_REDIS = Symbol('PUBLISHER_REDIS');
/** Handed to the BullMQ Worker, which needs retry-forever connections. */
export const BLOCKING_REDIS = Symbol('BLOCKING_REDIS');
/** Receives the API's cancellations for this worker's model. */
export const CANCELLATIONS_REDIS = Symbol('CANCELLATIONS_REDIS');

/**
 * The worker's connections, named after it, and their closer. The closer depends on them all, and
 * the queue worker on more, so it quits them after the queue worker has drained.
 */
export function workerRedisProviders(env: WorkerEnv): Provider[] {
  return redisConnectionProviders(redisTarget(env), [
    { provide: PUBLISHER_REDIS, role: 'commands', name: `worker-publisher:${env.WORKER_ID}` },
    { provide: BLOCKING_REDIS, role: 'blocking', name: `worker-queue:${env.WORKER_ID}` },
    { provide: CANCELLATIONS_REDIS, role: 'subscriber', name: `worker-cancellations:${env.WORKER_ID}` },
  ]);
}
