import { ApiEnv, loadEnv } from '@app/config';
import { ReservedEndpoints, canonicalAddress } from './mcp-reserved-endpoints';

const reserved = (vars: NodeJS.ProcessEnv): ReservedEndpoints => new ReservedEndpoints(loadEnv(ApiEnv, { API_KEYS: 'sk-test-key-123', ...vars }));

describe('ReservedEndpoints', () => {
  it('writes addresses one way', () => {
    expect(canonicalAddress('::ffff:7f00:1')).toBe('127.0.0.1');
    expect(canonicalAddress('[::FFFF:127.0.0.1]')).toBe('127.0.0.1');
    expect(canonicalAddress('2001:DB8:0:0::1')).toBe('2001:db8::1');
    expect(canonicalAddress('10.0.0.1')).toBe('10.0.0.1');
  });

  it("covers the Redis of REDIS_URL on its port, at any of this machine's addresses when it is local", async () => {
    const redis = reserved({ REDIS_URL: 'redis://127.0.0.1:6380' });
    await expect(redis.covers('127.0.0.1', 6380)).resolves.toBe(true);
    await expect(redis.covers('::1', 6380)).resolves.toBe(true);
    await expect(redis.covers('0.0.0.0', 6380)).resolves.toBe(true);
    await expect(redis.covers('::ffff:127.0.0.1', 6380)).resolves.toBe(true);
    await expect(redis.covers('127.0.0.1', 6379)).resolves.toBe(false);
    await expect(redis.covers('8.8.8.8', 6380)).resolves.toBe(false);
  });

  it('covers configured cluster nodes and sentinels', async () => {
    const redis = reserved({ REDIS_CLUSTER_NODES: '10.0.0.7:7000', REDIS_SENTINELS: '10.0.0.8:26379' });
    await expect(redis.covers('10.0.0.7', 7000)).resolves.toBe(true);
    await expect(redis.covers('10.0.0.8', 26379)).resolves.toBe(true);
    await expect(redis.covers('10.0.0.9', 7000)).resolves.toBe(false);
  });
});
