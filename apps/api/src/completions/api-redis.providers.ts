import { Inject, Injectable } from '@nestjs/common';
import type { OnApplicationShutdown, Provider } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { closeRedis, connectRedis, createRedisConnection } from '@app/redis';
import type { Redis } from 'ioredis';
import { hostname } from 'node:os';

/** Enqueues jobs (shared by every model's Queue); fails fast while Redis is away. */
export const COMMANDS_REDIS = Symbol('COMMANDS_REDIS');
/** The instance's one subscriber connection, multiplexed over all open completions. */
export const SUBSCRIBER_REDIS = Symbol('SUBSCRIBER_REDIS');

const instance = `${hostname()}-${process.pid}`;

export const apiRedisProviders: Provider[] = [
  {
    provide: COMMANDS_REDIS,
    inject: [ApiEnv],
    useFactory: (env: ApiEnv) => connectRedis(createRedisConnection(env.REDIS_URL, 'commands', `api-commands:${instance}`)),
  },
  {
    provide: SUBSCRIBER_REDIS,
    inject: [ApiEnv],
    useFactory: (env: ApiEnv) => connectRedis(createRedisConnection(env.REDIS_URL, 'subscriber', `api-events:${instance}`)),
  },
];

@Injectable()
export class ApiRedisCloser implements OnApplicationShutdown {
  constructor(
    @Inject(COMMANDS_REDIS) private readonly commands: Redis,
    @Inject(SUBSCRIBER_REDIS) private readonly subscriber: Redis,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([closeRedis(this.commands), closeRedis(this.subscriber)]);
  }
}
