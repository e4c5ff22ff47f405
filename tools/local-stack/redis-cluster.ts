import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './free-port';
import { ManagedProcess } from './managed-process';
import { hasRedisServerBinary, REDIS_INSTALL_HINT, redisServerArgs, waitForRedis } from './redis-server';

export interface LocalRedisCluster {
  /** host:port of every node, primaries first. */
  nodes: string[];
  processes: ManagedProcess[];
  stop(): Promise<void>;
}

async function startNode(port: number, dir: string, extraArgs: string[] = []): Promise<ManagedProcess> {
  const node = new ManagedProcess({
    name: `redis-node:${port}`,
    command: 'redis-server',
    args: redisServerArgs(port, dir, extraArgs),
  });
  await waitForRedis(`redis://127.0.0.1:${port}`);
  return node;
}

async function clusterIsOk(port: number): Promise<boolean> {
  const client = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return /cluster_state:ok/.test(await client.cluster('INFO'));
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/**
 * A real Redis Cluster on loopback from redis-server binaries: `primaries` primaries with
 * `replicasEach` replicas each, slots assigned by `redis-cli --cluster create`.
 */
export async function startRedisCluster(primaries = 3, replicasEach = 1): Promise<LocalRedisCluster> {
  if (!hasRedisServerBinary()) throw new Error(REDIS_INSTALL_HINT);
  const dir = mkdtempSync(join(tmpdir(), 'redis-cluster-'));
  const ports: number[] = [];
  for (let index = 0; index < primaries * (1 + replicasEach); index++) ports.push(await freePort());
  const processes = await Promise.all(
    ports.map((port) => startNode(port, dir, ['--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', '2000'])),
  );
  const nodes = ports.map((port) => `127.0.0.1:${port}`);
  execFileSync('redis-cli', ['--cluster', 'create', ...nodes, '--cluster-replicas', String(replicasEach), '--cluster-yes'], { stdio: 'ignore' });
  const deadline = Date.now() + 20_000;
  while (!(await Promise.all(ports.map(clusterIsOk))).every(Boolean)) {
    if (Date.now() > deadline) throw new Error('the Redis cluster did not reach cluster_state:ok');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    nodes,
    processes,
    stop: async () => {
      await Promise.all(processes.map((process) => process.stop('SIGKILL')));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
