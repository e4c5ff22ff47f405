import { Cluster, Redis } from 'ioredis';
import type { Callback, RedisOptions } from 'ioredis';
import type { RedisTarget } from './redis-target';
import { SentinelSwitchWatch } from './sentinel-switch-watch';

/** A connection to whichever deployment is configured: one server, Sentinel's primary, or a cluster. */
export type RedisClient = Redis | Cluster;

/**
 * What a connection is for decides how it behaves while Redis is away:
 * - `commands`: producer calls (enqueue, publish) fail fast instead of queueing in memory, so a
 *   request gets a clear error rather than a hang.
 * - `subscriber`: holds sharded SUBSCRIBE state; ioredis re-subscribes after a reconnect.
 * - `blocking`: BullMQ workers' connections must retry forever (`maxRetriesPerRequest: null`).
 */
export type RedisConnectionRole = 'commands' | 'subscriber' | 'blocking';

const ROLE_OPTIONS: Record<RedisConnectionRole, { maxRetriesPerRequest: number | null; enableOfflineQueue: boolean }> = {
  commands: { maxRetriesPerRequest: 1, enableOfflineQueue: false },
  subscriber: { maxRetriesPerRequest: null, enableOfflineQueue: true },
  blocking: { maxRetriesPerRequest: null, enableOfflineQueue: true },
};

const RECONNECT_DELAY_CAP_MS = 2000;

/** Reconnect quickly at first, then at most every 2 s, for ever: Redis restarts must heal by themselves. */
function retryStrategy(times: number): number {
  return Math.min(50 * 2 ** Math.min(times, 6), RECONNECT_DELAY_CAP_MS);
}

/**
 * A BullMQ worker's `runRetryDelay`: how long it waits after a connection error (fetching the next
 * job, or moving a finished one) before trying again. BullMQ's default (15 s; its docs call the
 * option internal) left workers idle, with jobs waiting, long after a Redis restart or failover
 * had healed, and held up their shutdown as long; this tries as often as the connection reconnects.
 */
export const QUEUE_WORKER_RETRY_DELAY_MS = RECONNECT_DELAY_CAP_MS;

export function createRedisConnection(target: RedisTarget, role: RedisConnectionRole, name: string): RedisClient {
  const client = connect(target, role, name);
  // While Redis is away every reconnect attempt emits an error; callers learn of the outage from
  // failed commands and 'close' events, and boot fails loudly in connectRedis.
  client.on('error', () => undefined);
  return client;
}

function connect(target: RedisTarget, role: RedisConnectionRole, name: string): RedisClient {
  // Commands issued in the same tick (many jobs' SPUBLISHes, many requests' enqueues) go out in
  // one write instead of one syscall each. Only for plain command connections: subscriber and
  // blocking connections hold state that a batch must not reorder or hold up.
  const enableAutoPipelining = role === 'commands';
  const options = { ...ROLE_OPTIONS[role], connectionName: name, lazyConnect: true, enableAutoPipelining };
  switch (target.kind) {
    case 'standalone':
      return new Redis(target.url, { ...options, retryStrategy });
    case 'sentinel':
      return new SentinelRedis(
        {
          ...options,
          retryStrategy,
          sentinels: target.sentinels,
          name: target.masterName,
          password: target.password,
          sentinelRetryStrategy: retryStrategy,
          // A connection that still lands on a replica (a partition, a missed announcement) moves at
          // its first refused write; `true` rejects that command rather than resending it. READONLY
          // may come wrapped, in a script's error.
          reconnectOnError: (error: Error) => error.message.includes('READONLY'),
        },
        switchWatchFor(target),
      );
    case 'cluster':
      return new Cluster(target.nodes, {
        enableOfflineQueue: options.enableOfflineQueue,
        enableAutoPipelining,
        lazyConnect: true,
        clusterRetryStrategy: retryStrategy,
        // Token events use sharded pub/sub, which needs a subscriber per primary.
        shardedSubscribers: role === 'subscriber',
        redisOptions: { maxRetriesPerRequest: options.maxRetriesPerRequest, connectionName: name, password: target.password },
      });
  }
}

/** One watch per Sentinel deployment and master in a process, shared by all its connections. */
const switchWatches = new Map<string, SentinelSwitchWatch>();

function switchWatchFor(target: Extract<RedisTarget, { kind: 'sentinel' }>): SentinelSwitchWatch {
  const key = JSON.stringify([target.sentinels, target.masterName]);
  let watch = switchWatches.get(key);
  if (!watch) switchWatches.set(key, (watch = new SentinelSwitchWatch(target.sentinels, target.masterName, retryStrategy)));
  return watch;
}

/** A Sentinel-mode client that its watch moves off a replaced primary; so are its duplicates (BullMQ's blocking connections). */
class SentinelRedis extends Redis {
  constructor(
    options: RedisOptions & { replyMapping?: 'legacy' },
    private readonly switchWatch: SentinelSwitchWatch,
  ) {
    super(options);
    switchWatch.follow(this);
  }

  override duplicate(override?: Partial<RedisOptions>): ReturnType<Redis['duplicate']> {
    return new SentinelRedis({ ...this.options, ...override, replyMapping: 'legacy' }, this.switchWatch);
  }

  // Closed while reconnecting, a connection never emits 'end'.
  override disconnect(reconnect = false): void {
    if (!reconnect) this.switchWatch.unfollow(this);
    super.disconnect(reconnect);
  }

  override quit(callback?: Callback<'OK'>): Promise<'OK'> {
    this.switchWatch.unfollow(this);
    return super.quit(callback);
  }
}

/** Connects and waits until Redis answers, so a process fails at boot rather than on its first request. */
export async function connectRedis<T extends RedisClient>(client: T): Promise<T> {
  if (client.status === 'wait') await client.connect();
  await client.ping();
  return client;
}

/** Closes politely, but never lets a dead Redis hold up shutdown. */
export async function closeRedis(client: RedisClient, timeoutMs = 1000): Promise<void> {
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
