import type { RedisEnv } from '@app/config';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { bareAddress, specialRange } from './mcp-address-policy';

interface Endpoint {
  host: string;
  port: number;
}

/** `::ffff:7f00:1` and `::ffff:127.0.0.1` are 127.0.0.1; other addresses as URL writes them (lower case, compressed). */
export function canonicalAddress(address: string): string {
  const bare = bareAddress(address);
  if (isIP(bare) !== 6) return bare;
  const compressed = new URL(`http://[${bare}]/`).hostname.slice(1, -1);
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(compressed);
  if (!mapped) return compressed;
  const [high, low] = [parseInt(mapped[1], 16), parseInt(mapped[2], 16)];
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
}

function redisEndpoints(env: RedisEnv): Endpoint[] {
  const url = new URL(env.REDIS_URL);
  const hostPort = (text: string): Endpoint => {
    const colon = text.lastIndexOf(':');
    return { host: bareAddress(text.slice(0, colon)), port: Number(text.slice(colon + 1)) };
  };
  return [
    { host: bareAddress(url.hostname), port: url.port === '' ? 6379 : Number(url.port) },
    ...env.REDIS_CLUSTER_NODES.map(hostPort),
    ...env.REDIS_SENTINELS.map(hostPort),
  ];
}

/** Whether `address` is this machine: loopback, unspecified (which connects to the machine itself) or one of its interfaces. */
function isThisMachine(address: string): boolean {
  const range = specialRange(address);
  if (range === 'loopback' || range === 'unspecified') return true;
  return Object.values(networkInterfaces()).some((addresses) => addresses?.some((local) => canonicalAddress(local.address) === address));
}

/**
 * Addresses no MCP connection may reach, whatever the allowlist says: the Redis this API uses
 * (REDIS_URL, REDIS_CLUSTER_NODES, REDIS_SENTINELS), which an outbound HTTP request could
 * otherwise talk to. A Redis on this machine is guarded at every address of the machine.
 * Cluster nodes and a Sentinel's primary that are discovered, not configured, are not known here:
 * they are on private addresses, which only an allowlist entry naming them exactly opens.
 */
export class ReservedEndpoints {
  private readonly endpoints: readonly Endpoint[];

  constructor(env: RedisEnv) {
    this.endpoints = redisEndpoints(env);
  }

  /** Whether a connection to `address` (resolved) on `port` could reach one of them. */
  async covers(address: string, port: number): Promise<boolean> {
    const target = canonicalAddress(address);
    for (const endpoint of this.endpoints.filter((candidate) => candidate.port === port)) {
      const addresses = isIP(endpoint.host)
        ? [endpoint.host]
        : await lookup(endpoint.host, { all: true }).then(
            (found) => found.map(({ address: resolved }) => resolved),
            () => [],
          );
      const canonical = addresses.map(canonicalAddress);
      if (canonical.includes(target)) return true;
      if (canonical.some(isThisMachine) && isThisMachine(target)) return true;
    }
    return false;
  }
}
