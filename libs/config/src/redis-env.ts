import { IsString, Matches } from 'class-validator';
import { CommaList } from './env-transforms';
import { SecretEnv } from './secret-env';

const HOST_PORT = /^[^\s:]+:\d{1,5}$/;

/**
 * Where Redis is, for both apps: one server (REDIS_URL), a Redis Cluster (REDIS_CLUSTER_NODES),
 * or a primary watched by Sentinel (REDIS_SENTINELS + REDIS_SENTINEL_MASTER). The first of
 * cluster, then sentinel, that is set wins over REDIS_URL. The API and its workers must name
 * the same Redis.
 * @title Redis, for the API and the worker
 */
export class RedisEnv {
  /** The Redis holding the queues and event channels: a `redis://` or `rediss://` URL of a single server. */
  @Matches(/^rediss?:\/\/\S+$/, { message: 'must be a redis:// or rediss:// URL' })
  REDIS_URL = 'redis://127.0.0.1:6379';

  /** Comma-separated `host:port` of some Redis Cluster nodes (the rest are discovered); when set, used instead of REDIS_URL. */
  @CommaList()
  @Matches(HOST_PORT, { each: true, message: 'each node must be host:port' })
  REDIS_CLUSTER_NODES: string[] = [];

  /**
   * Comma-separated `host:port` of the Sentinels watching the primary named REDIS_SENTINEL_MASTER;
   * when set (and no cluster), the primary they name is used.
   */
  @CommaList()
  @Matches(HOST_PORT, { each: true, message: 'each sentinel must be host:port' })
  REDIS_SENTINELS: string[] = [];

  /** The primary's name in Sentinel. */
  @IsString()
  REDIS_SENTINEL_MASTER = 'mymaster';

  /** Password of the Redis data nodes in cluster and sentinel modes (REDIS_URL carries its own). */
  @SecretEnv()
  @IsString()
  REDIS_PASSWORD = '';
}
