import type { HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import type { RedisClient } from './redis-connections';

/** A Redis that does not answer PING within this long counts as unreachable. */
export const REDIS_PING_TIMEOUT_MS = 1000;

/** The `redis` readiness check both apps report: up when `redis` answers PING in time. */
export function redisPing(indicators: HealthIndicatorService, redis: RedisClient): PromiseLike<HealthIndicatorResult> {
  return indicators
    .check('redis')
    .attempt(async () => void (await redis.ping()))
    .withTimeout(REDIS_PING_TIMEOUT_MS);
}
