import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './free-port';
import { ManagedProcess } from './managed-process';
import { hasRedisServerBinary, REDIS_INSTALL_HINT, redisServerArgs, waitForRedis } from './redis-server';

export const SENTINEL_MASTER_NAME = 'mymaster';

export interface LocalRedisSentinel {
  primary: ManagedProcess;
  replica: ManagedProcess;
  /** host:port of each Sentinel. */
  sentinels: string[];
  masterName: string;
  /** host:port of the node Sentinel currently calls the primary. */
  currentPrimary(): Promise<string>;
  /** A planned failover (SENTINEL FAILOVER): the replica is promoted, the primary kept as its replica. */
  failover(): Promise<void>;
  stop(): Promise<void>;
}

/** Runs `ask` on a connection of its own to one Redis node or Sentinel (host:port). */
export async function onNode<T>(address: string, ask: (node: Redis) => Promise<T>): Promise<T> {
  const [host, port] = address.split(':');
  const node = new Redis(Number(port), host, { lazyConnect: true, maxRetriesPerRequest: 0 });
  node.on('error', () => undefined);
  try {
    await node.connect();
    return await ask(node);
  } finally {
    node.disconnect();
  }
}

/** Polls `ready` every 200 ms for up to 30 s, then fails with `failure`. */
async function waitUntil(failure: string, ready: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error(failure);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Asks one Sentinel (host:port) a SENTINEL subcommand. */
const askSentinel = (address: string, command: string[]): Promise<unknown> => onNode(address, (sentinel) => sentinel.call('SENTINEL', ...command));

/**
 * A primary, one replica and `sentinelCount` Sentinels on loopback, tuned to fail over within
 * a few seconds (down after 1 s) so a test can kill the primary and watch the service recover.
 * A Sentinel whose timer runs 2 s late (a loaded CI machine) enters TILT and acts on nothing for
 * 30 s by default; here for 3 s, so a stall does not outlast a test's wait for the failover.
 */
export async function startRedisSentinel(sentinelCount = 1): Promise<LocalRedisSentinel> {
  if (!hasRedisServerBinary()) throw new Error(REDIS_INSTALL_HINT);
  const dir = mkdtempSync(join(tmpdir(), 'redis-sentinel-'));
  const processes: ManagedProcess[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(processes.map((process) => process.stop('SIGKILL')));
    rmSync(dir, { recursive: true, force: true });
  };
  const start = async (name: string, args: string[], port: number): Promise<ManagedProcess> => {
    const process = new ManagedProcess({ name: `${name}:${port}`, command: 'redis-server', args });
    processes.push(process);
    await waitForRedis(`redis://127.0.0.1:${port}`);
    return process;
  };
  try {
    const [primaryPort, replicaPort] = [await freePort(), await freePort()];
    const primary = await start('redis-primary', redisServerArgs(primaryPort, dir), primaryPort);
    const replica = await start('redis-replica', redisServerArgs(replicaPort, dir, ['--replicaof', '127.0.0.1', String(primaryPort)]), replicaPort);
    await waitUntil('the replica did not finish its first sync', async () =>
      (await onNode(`127.0.0.1:${replicaPort}`, (node) => node.info('replication'))).includes('master_link_status:up'),
    );

    const sentinels: string[] = [];
    for (let index = 0; index < sentinelCount; index++) {
      const port = await freePort();
      const config = join(dir, `sentinel-${port}.conf`);
      writeFileSync(
        config,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${SENTINEL_MASTER_NAME} 127.0.0.1 ${primaryPort} 1`,
          // Declared, not left to discovery: Sentinel finds replicas in the primary's INFO, asked
          // every 10 s, so one asked before the replica's sync had to wait a round (a CI failure).
          `sentinel known-replica ${SENTINEL_MASTER_NAME} 127.0.0.1 ${replicaPort}`,
          `sentinel down-after-milliseconds ${SENTINEL_MASTER_NAME} 1000`,
          `sentinel failover-timeout ${SENTINEL_MASTER_NAME} 5000`,
          `sentinel parallel-syncs ${SENTINEL_MASTER_NAME} 1`,
          '',
        ].join('\n'),
      );
      await start('redis-sentinel', [config, '--sentinel'], port);
      // SENTINEL DEBUG came with Redis 7.0, which sharded pub/sub needs anyway.
      await askSentinel(`127.0.0.1:${port}`, ['debug', 'tilt-period', '3000']);
      sentinels.push(`127.0.0.1:${port}`);
    }

    // Sentinel must have reached the replica before a failover can promote it.
    await waitUntil('Sentinel did not reach the replica', async () => {
      const replicas = (await askSentinel(sentinels[0], ['replicas', SENTINEL_MASTER_NAME])) as string[][];
      return replicas.some((fields) => {
        const flags = fields[fields.indexOf('flags') + 1] ?? '';
        return flags === 'slave';
      });
    });

    return {
      primary,
      replica,
      sentinels,
      masterName: SENTINEL_MASTER_NAME,
      currentPrimary: async () => ((await askSentinel(sentinels[0], ['get-master-addr-by-name', SENTINEL_MASTER_NAME])) as string[]).join(':'),
      failover: async () => {
        await askSentinel(sentinels[0], ['failover', SENTINEL_MASTER_NAME]);
      },
      stop,
    };
  } catch (error) {
    // Nothing started is left running when set-up fails part way.
    await stop();
    throw error;
  }
}
