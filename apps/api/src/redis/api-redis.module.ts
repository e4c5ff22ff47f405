import { Module } from '@nestjs/common';
import type { DynamicModule } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { redisConnectionProviders, redisTarget } from '@app/redis';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

/** Enqueues jobs (shared by every model's Queue); fails fast while Redis is away. */
export const COMMANDS_REDIS = Symbol('COMMANDS_REDIS');
/** The instance's one subscriber connection, multiplexed over all open completions. */
export const SUBSCRIBER_REDIS = Symbol('SUBSCRIBER_REDIS');
/** This process among all API instances, now and before (a string): its reply channel must be its alone. */
export const API_INSTANCE_ID = Symbol('API_INSTANCE_ID');

function newApiInstanceId(): string {
  return `${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
}

/**
 * What every module of an API process uses: its validated environment, its identity and its fixed
 * handful of Redis connections, injected wherever they are used. Global, so the feature modules
 * need not import it, and closed after every other module's shutdown hooks have run (Nest runs a
 * global module's hooks first at boot and last at shutdown): nothing still draining loses Redis.
 */
@Module({})
export class ApiRedisModule {
  /** A new instance id for each app registered: two apps in one process never share a reply channel. */
  static register(env: ApiEnv): DynamicModule {
    const instanceId = newApiInstanceId();
    return {
      module: ApiRedisModule,
      global: true,
      providers: [
        { provide: ApiEnv, useValue: env },
        { provide: API_INSTANCE_ID, useValue: instanceId },
        ...redisConnectionProviders(redisTarget(env), [
          { provide: COMMANDS_REDIS, role: 'commands', name: `api-commands:${instanceId}` },
          { provide: SUBSCRIBER_REDIS, role: 'subscriber', name: `api-events:${instanceId}` },
        ]),
      ],
      exports: [ApiEnv, API_INSTANCE_ID, COMMANDS_REDIS, SUBSCRIBER_REDIS],
    };
  }
}
