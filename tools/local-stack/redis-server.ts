import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Redis } from 'ioredis';
import { freePort } from './free-port';
import { ManagedProcess } from './managed-process';

export interface LocalRedis {
  url: string;
  /** Present when this process started the server (and so may stop or restart it). */
  process?: ManagedProcess;
  stop(): Promise<void>;
}

export const REDIS_INSTALL_HINT =
  'No redis-server binary found. Install it (Debian/Ubuntu: `sudo apt-get install redis-server`, macOS: `brew install redis`) or set REDIS_URL to a running Redis.';

export function hasRedisServerBinary(): boolean {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Waits until Redis at `url` answers PING. */
export async function waitForRedis(url: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => undefined); // a refused connection is expected until the server is up
    try {
      await client.connect();
      await client.ping();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`Redis at ${url} did not answer within ${timeoutMs} ms: ${String(error)}`);
    } finally {
      // Not once ended (refused): ioredis would arm a 2 s timer to destroy the closed socket, which
      // keeps a process (jest) alive after its work is done.
      if (client.status !== 'end') client.disconnect();
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * A throwaway redis-server's arguments: loopback only, no eviction (BullMQ requires it), nothing
 * kept on disk; `dir` where a cluster node or replica writes its files, `extra` for its role.
 */
export function redisServerArgs(port: number, dir?: string, extra: readonly string[] = []): string[] {
  const files = dir === undefined ? [] : ['--dir', dir, '--dbfilename', `dump-${port}.rdb`];
  return [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    ...files,
    '--save',
    '',
    '--appendonly',
    'no',
    '--maxmemory-policy',
    'noeviction',
    '--loglevel',
    'warning',
    ...extra,
  ];
}

/**
 * Starts a throwaway redis-server on a free loopback port, configured as BullMQ requires
 * (no eviction) and keeping nothing on disk.
 */
export async function startRedisServer(options: { port?: number; logFile?: string } = {}): Promise<LocalRedis> {
  if (!hasRedisServerBinary()) throw new Error(REDIS_INSTALL_HINT);
  const port = options.port ?? (await freePort());
  const server = new ManagedProcess({
    name: `redis-server:${port}`,
    command: 'redis-server',
    args: redisServerArgs(port),
    logFile: options.logFile,
  });
  const url = `redis://127.0.0.1:${port}`;
  await waitForRedis(url);
  return { url, process: server, stop: async () => void (await server.stop('SIGTERM', 5000)) };
}

/** Whether a Docker engine is reachable, so Testcontainers can be used. */
export function dockerEngineAvailable(): boolean {
  if (process.env.DOCKER_HOST) return true;
  if (!existsSync('/var/run/docker.sock')) return false;
  try {
    execFileSync('docker', ['info'], { stdio: 'ignore', timeout: 5000 });
    return true;
  } catch {
    return false;
  }
}
