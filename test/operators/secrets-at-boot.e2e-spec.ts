import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { ManagedProcess } from '../../tools/local-stack/managed-process';
import { API_ENTRY, WORKER_ENTRY } from '../../tools/local-stack/services';
import { e2eStack } from '../support/stack-env';

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Starts the built app with `env` over a clean base, and gives back its exit code and everything it printed. */
async function boot(entry: string, env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const app = new ManagedProcess({ name: 'boot', command: process.execPath, args: [entry], env: { PATH: process.env.PATH, ...env } });
  // 'close' comes after the last output, 'exit' may come before it.
  const closed = new Promise((resolve) => app.child.once('close', resolve));
  const timer = setTimeout(() => app.child.kill('SIGKILL'), 30_000);
  const code = await app.exit;
  await closed;
  clearTimeout(timer);
  return { code, output: app.recentOutput };
}

/**
 * Boot logs go to log aggregation that many people read: a process that cannot start says which
 * variable is wrong and why, but never prints a secret's value or a URL's password.
 */
describe('secrets at boot', () => {
  const stack = e2eStack();

  it('API: every malformed secret is named, none is shown, and a URL is shown without its password', async () => {
    const secrets = {
      API_KEYS: 'sk-boot-secret-key-1,kq7z',
      PRIORITY_TIER_KEYS: 'sk-boot-secret-key-1',
      FAIR_SHARE_WEIGHTS: 'sk-boot-secret-key-1=heavy',
      ADMIN_PASSWORD: 'adm-pw-91',
      METRICS_TOKEN: 'mtok 0123456789abcdef',
      REDIS_PASSWORD: 'redis-node-pw-42',
    };
    const { code, output } = await boot(API_ENTRY, {
      ...secrets,
      REDIS_URL: 'http://:redis-url-pw-77@127.0.0.1:6379',
      FILES_S3_ENDPOINT: 'minio://AKIAEXAMPLE:s3-pw-55@minio:9000',
      API_PROCESSES: '1',
    });
    expect(code).toBe(1);
    for (const name of ['API_KEYS', 'FAIR_SHARE_WEIGHTS', 'ADMIN_PASSWORD', 'METRICS_TOKEN'])
      expect(output).toMatch(new RegExp(`${name}: .+\\(value not shown: it is a secret\\)`));
    expect(output).toContain('REDIS_URL: must be a redis:// or rediss:// URL (got "http://:***@127.0.0.1:6379")');
    expect(output).toContain('FILES_S3_ENDPOINT: must be an http:// or https:// URL (got "minio://AKIAEXAMPLE:***@minio:9000")');
    for (const value of ['sk-boot-secret-key-1', '=heavy', 'kq7z', 'adm-pw-91', 'mtok', 'redis-node-pw-42', 'redis-url-pw-77', 's3-pw-55'])
      expect(output).not.toContain(value);
  });

  it('worker: a malformed upstream key or token is named, not shown, and credentials in UPSTREAM_BASE_URL are refused masked', async () => {
    const { code, output } = await boot(WORKER_ENTRY, {
      ENGINE: 'openai',
      UPSTREAM_BASE_URL: 'http://svc:up-url-pw-66@127.0.0.1:8000/v1',
      UPSTREAM_API_KEY: 'sk-up key-31',
      METRICS_TOKEN: 'w-tok-8',
      REDIS_PASSWORD: 'redis-node-pw-43',
    });
    expect(code).toBe(1);
    for (const name of ['UPSTREAM_API_KEY', 'METRICS_TOKEN']) expect(output).toMatch(new RegExp(`${name}: .+\\(value not shown: it is a secret\\)`));
    expect(output).toMatch(/UPSTREAM_BASE_URL: must not carry credentials .+ \(got "http:\/\/svc:\*\*\*@127\.0\.0\.1:8000\/v1"\)/);
    for (const value of ['up-url-pw-66', 'sk-up', 'key-31', 'w-tok-8', 'redis-node-pw-43']) expect(output).not.toContain(value);
  });

  it.each([
    ['API', API_ENTRY, { API_KEYS: 'sk-boot-secret-key-2', API_PROCESSES: '1' }],
    ['worker', WORKER_ENTRY, { MODEL_PATH: stack.modelPath, ENGINE_THREADS: '1', GPU: 'false', HEALTH_PORT: '0' }],
  ])('%s: a Redis it cannot reach at boot is reported without the password in REDIS_URL', async (_app, entry, env) => {
    const { code, output } = await boot(entry, { ...env, REDIS_URL: `redis://ops:redis-url-pw-88@127.0.0.1:${await closedPort()}` });
    expect(code).toBe(1);
    expect(output).toMatch(/ECONNREFUSED|connect/i);
    expect(output).not.toContain('redis-url-pw-88');
  });
});
