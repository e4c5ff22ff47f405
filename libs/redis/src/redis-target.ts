import type { RedisEnv } from '@app/config';

export interface HostPort {
  host: string;
  port: number;
}

/** Which kind of Redis deployment to connect to, read from RedisEnv. */
export type RedisTarget =
  | { kind: 'standalone'; url: string }
  | { kind: 'cluster'; nodes: HostPort[]; password?: string }
  | { kind: 'sentinel'; sentinels: HostPort[]; masterName: string; password?: string };

function hostPort(value: string): HostPort {
  const separator = value.lastIndexOf(':');
  return { host: value.slice(0, separator), port: Number(value.slice(separator + 1)) };
}

export function redisTarget(env: RedisEnv): RedisTarget {
  const password = env.REDIS_PASSWORD || undefined;
  if (env.REDIS_CLUSTER_NODES.length > 0) return { kind: 'cluster', nodes: env.REDIS_CLUSTER_NODES.map(hostPort), password };
  if (env.REDIS_SENTINELS.length > 0) {
    return { kind: 'sentinel', sentinels: env.REDIS_SENTINELS.map(hostPort), masterName: env.REDIS_SENTINEL_MASTER, password };
  }
  return { kind: 'standalone', url: env.REDIS_URL };
}
