import { Matches } from 'class-validator';

/** Settings both apps share: where Redis is. */
export class RedisEnv {
  /** redis:// or rediss:// URL of the Redis that holds the queues and event channels. */
  @Matches(/^rediss?:\/\/\S+$/, { message: 'must be a redis:// or rediss:// URL' })
  REDIS_URL = 'redis://127.0.0.1:6379';
}
