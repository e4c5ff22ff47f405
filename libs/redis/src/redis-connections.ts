import { Redis } from 'ioredis';
import type { RedisOptions } from 'ioredis';

/**
 * What a connection is for decides how it behaves while Redis is away:
 * - `commands`: producer calls (enqueue, publish) fail fast instead of queueing in memory, so a
 *   request gets a clear error rather than a hang.
 * - `subscriber`: holds SUBSCRIBE state; ioredis re-subscribes its channels after a reconnect.
 * - `blocking`: BullMQ workers' connections must retry forever (`maxRetriesPerRequest: null`).
 */
export type RedisConnectionRole = 'commands' | 'subscriber' | 'blocking';

const ROLE_OPTIONS: Record<RedisConnectionRole, RedisOptions> = {
  commands: { maxRetriesPerRequest: 1, enableOfflineQueue: false },
  subscriber: { maxRetriesPerRequest: null, enableOfflineQueue: true },
  blocking: { maxRetriesPerRequest: null, enableOfflineQueue: true },
};

/** Reconnect quickly at first, then at most every 2 s, for ever: Redis restarts must heal by themselves. */
function retryStrategy(times: number): number {
  return Math.min(50 * 2 ** Math.min(times, 6), 2000);
}

export function createRedisConnection(url: string, role: RedisConnectionRole, name: string): Redis {
  return new Redis(url, { ...ROLE_OPTIONS[role], retryStrategy, connectionName: name, lazyConnect: true });
}

/** Connects and waits until Redis answers, so a process fails at boot rather than on its first request. */
export async function connectRedis(client: Redis): Promise<Redis> {
  if (client.status === 'wait') await client.connect();
  await client.ping();
  return client;
}

/** Closes politely, but never lets a dead Redis hold up shutdown. */
export async function closeRedis(client: Redis, timeoutMs = 1000): Promise<void> {
  if (client.status === 'end') return;
  const timer = setTimeout(() => client.disconnect(), timeoutMs);
  try {
    await client.quit();
  } catch {
    client.disconnect();
  } finally {
    clearTimeout(timer);
  }
}
