import { Inject, Injectable } from '@nestjs/common';
import type { OnApplicationShutdown, Provider } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { closeRedis, connectRedis, createRedisConnection, redisTarget } from '@app/redis';
import type { RedisClient } from '@app/redis';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

/** Enqueues jobs (shared by every model's Queue); fails fast while Redis is away. */
export const COMMANDS_REDIS = Symbol('COMMANDS_REDIS');
/** The instance's one subscriber connection, multiplexed over all open completions. */
export const SUBSCRIBER_REDIS = Symbol('SUBSCRIBER_REDIS');

/** This process among all API instances, now and before: its reply channel must be its alone. */
export const API_INSTANCE_ID = `${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
const instance = API_INSTANCE_ID;

export const apiRedisProviders: Provider[] = [
  {
    provide: COMMANDS_REDIS,
    inject: [ApiEnv],
    useFactory: (env: ApiEnv) => connectRedis(createRedisConnection(redisTarget(env), 'commands', `api-commands:${instance}`)),
  },
  {
    provide: SUBSCRIBER_REDIS,
    inject: [ApiEnv],
    useFactory: (env: ApiEnv) => connectRedis(createRedisConnection(redisTarget(env), 'subscriber', `api-events:${instance}`)),
  },
];

@Injectable()
export class ApiRedisCloser implements OnApplicationShutdown {
  constructor(
    @Inject(COMMANDS_REDIS) private readonly commands: RedisClient,
    @Inject(SUBSCRIBER_REDIS) private readonly subscriber: RedisClient,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([closeRedis(this.commands), closeRedis(this.subscriber)]);
  }
}
