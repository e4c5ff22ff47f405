import type { OnApplicationShutdown, Provider } from '@nestjs/common';
import { closeRedis, connectRedis, createRedisConnection } from './redis-connections';
import type { RedisClient, RedisConnectionRole } from './redis-connections';
import type { RedisTarget } from './redis-target';

/** One Redis connection of a process: the token it is injected by, what it is for, and the name CLIENT LIST shows. */
export interface RedisConnectionSpec {
  provide: symbol;
  role: RedisConnectionRole;
  name: string;
}

/** Quits a process's connections on shutdown; it depends on all of them, so its module's users of them stop first. */
class RedisConnectionsCloser implements OnApplicationShutdown {
  constructor(private readonly clients: RedisClient[]) {}

  async onApplicationShutdown(): Promise<void> {
    await Promise.all(this.clients.map((client) => closeRedis(client)));
  }
}

/**
 * The Nest providers of a process's Redis connections (the API's and the worker's alike): each one
 * connected before boot goes on, so a process without Redis fails at boot rather than on its first
 * request, and one closer that quits them all on shutdown.
 */
export function redisConnectionProviders(target: RedisTarget, connections: RedisConnectionSpec[]): Provider[] {
  return [
    ...connections.map(({ provide, role, name }): Provider => ({ provide, useFactory: () => connectRedis(createRedisConnection(target, role, name)) })),
    {
      provide: RedisConnectionsCloser,
      inject: connections.map(({ provide }) => provide),
      useFactory: (...clients: RedisClient[]) => new RedisConnectionsCloser(clients),
    },
  ];
}
