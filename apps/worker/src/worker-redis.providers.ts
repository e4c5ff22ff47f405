import type { OnApplicationShutdown, Provider } from '@nestjs/common';
import { Inject, Injectable } from '@nestjs/common';
import { WorkerEnv } from '@app/config';
import { closeRedis, connectRedis, createRedisConnection, redisTarget } from '@app/redis';
import type { RedisClient } from '@app/redis';

/** Publishes token events; fails fast while Redis is away. */
export const PUBLISHER_REDIS = Symbol('PUBLISHER_REDIS');
/** Handed to the BullMQ Worker, which needs retry-forever connections. */
export const BLOCKING_REDIS = Symbol('BLOCKING_REDIS');
/** Receives the API's cancellations for this worker's model. */
export const CANCELLATIONS_REDIS = Symbol('CANCELLATIONS_REDIS');

export const workerRedisProviders: Provider[] = [
  {
    provide: PUBLISHER_REDIS,
    inject: [WorkerEnv],
    useFactory: (env: WorkerEnv) => connectRedis(createRedisConnection(redisTarget(env), 'commands', `worker-publisher:${env.WORKER_ID}`)),
  },
  {
    provide: BLOCKING_REDIS,
    inject: [WorkerEnv],
    useFactory: (env: WorkerEnv) => connectRedis(createRedisConnection(redisTarget(env), 'blocking', `worker-queue:${env.WORKER_ID}`)),
  },
  {
    provide: CANCELLATIONS_REDIS,
    inject: [WorkerEnv],
    useFactory: (env: WorkerEnv) =>
      connectRedis(createRedisConnection(redisTarget(env), 'subscriber', `worker-cancellations:${env.WORKER_ID}`)),
  },
];

/** Closes the worker's Redis connections last, after the queue worker has drained. */
@Injectable()
export class WorkerRedisCloser implements OnApplicationShutdown {
  constructor(
    @Inject(PUBLISHER_REDIS) private readonly publisher: RedisClient,
    @Inject(BLOCKING_REDIS) private readonly blocking: RedisClient,
    @Inject(CANCELLATIONS_REDIS) private readonly cancellations: RedisClient,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([closeRedis(this.publisher), closeRedis(this.blocking), closeRedis(this.cancellations)]);
  }
}
