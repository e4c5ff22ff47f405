import type { RedisClient } from '@app/redis';

/** Releases a lease: it is no longer renewed and expires after its grace period. */
export type ReleaseLease = () => void;

/**
 * Keeps a resumable completion's lease alive while this instance follows it for a client: the
 * worker generates on only while the key exists. Renewed three times per grace period, so one
 * slow renewal does not let it lapse; a client that leaves (or an instance that dies) stops the
 * renewals, and the worker stops a grace period later unless a resumed stream renews it again.
 */
export async function holdLease(redis: RedisClient, key: string, graceMs: number): Promise<ReleaseLease> {
  await redis.set(key, '1', 'PX', graceMs);
  const renew = (): void => void redis.set(key, '1', 'PX', graceMs).catch(() => undefined);
  const timer = setInterval(renew, Math.floor(graceMs / 3));
  timer.unref();
  return () => clearInterval(timer);
}
