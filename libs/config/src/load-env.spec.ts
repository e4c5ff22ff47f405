import type { ClassConstructor } from 'class-transformer';
import { ApiEnv } from './api-env';
import { InvalidEnvironmentError, loadEnv } from './load-env';
import { isSecretEnv, maskUrlCredentials } from './secret-env';
import { WorkerEnv } from './worker-env';

/** The message loadEnv stops with for `env`. */
function refusal(envClass: ClassConstructor<object>, env: NodeJS.ProcessEnv): string {
  try {
    loadEnv(envClass, env);
  } catch (error) {
    if (error instanceof InvalidEnvironmentError) return error.message;
    throw error;
  }
  throw new Error(`loadEnv accepted ${JSON.stringify(env)}`);
}

const API_BASE = { API_KEYS: 'key-one-123' };
const OPENAI_BASE = { ENGINE: 'openai', UPSTREAM_BASE_URL: 'http://vllm:8000/v1' };

describe('loadEnv', () => {
  it('applies defaults and converts numbers and lists', () => {
    const env = loadEnv(ApiEnv, { API_KEYS: 'key-one-123, key-two-456', PORT: '9000' });
    expect(env.PORT).toBe(9000);
    expect(env.API_KEYS).toEqual(['key-one-123', 'key-two-456']);
    expect(env.MODELS).toEqual(['tiny-chat']);
    expect(env.REDIS_URL).toBe('redis://127.0.0.1:6379');
  });

  it('stops with a message naming every bad variable', () => {
    let thrown: unknown;
    try {
      loadEnv(ApiEnv, { API_KEYS: '', PORT: 'eighty', REDIS_URL: 'localhost' });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(InvalidEnvironmentError);
    const message = (thrown as Error).message;
    expect(message).toMatch(/PORT/);
    expect(message).toMatch(/API_KEYS/);
    expect(message).toMatch(/REDIS_URL/);
  });

  it('refuses a worker thread count that is not a positive integer', () => {
    expect(() => loadEnv(WorkerEnv, { ENGINE_THREADS: '0' })).toThrow(/ENGINE_THREADS/);
    expect(() => loadEnv(WorkerEnv, { PARALLEL_SEQUENCES: '2.5' })).toThrow(/PARALLEL_SEQUENCES/);
  });

  it('keeps no contents of finished jobs unless RETAIN_CONTENT is true', () => {
    expect(loadEnv(WorkerEnv, {}).RETAIN_CONTENT).toBe(false);
    expect(loadEnv(WorkerEnv, { RETAIN_CONTENT: 'true' }).RETAIN_CONTENT).toBe(true);
    expect(loadEnv(WorkerEnv, { RETAIN_CONTENT: 'false' }).RETAIN_CONTENT).toBe(false);
    expect(() => loadEnv(WorkerEnv, { RETAIN_CONTENT: 'yes' })).toThrow(/RETAIN_CONTENT: must be true or false/);
  });

  it('takes a METRICS_TOKEN of 16 characters or more, or none', () => {
    expect(loadEnv(WorkerEnv, {}).METRICS_TOKEN).toBe('');
    expect(loadEnv(ApiEnv, { API_KEYS: 'key-one-123', METRICS_TOKEN: 'scrape-token-0123' }).METRICS_TOKEN).toBe('scrape-token-0123');
    expect(() => loadEnv(ApiEnv, { API_KEYS: 'key-one-123', METRICS_TOKEN: 'short' })).toThrow(/METRICS_TOKEN/);
    expect(() => loadEnv(WorkerEnv, { METRICS_TOKEN: 'with a space in it' })).toThrow(/METRICS_TOKEN/);
  });

  it('needs an http(s) UPSTREAM_BASE_URL ending in /v1 only with ENGINE=openai', () => {
    expect(loadEnv(WorkerEnv, {}).UPSTREAM_BASE_URL).toBe('');
    expect(() => loadEnv(WorkerEnv, { ENGINE: 'openai' })).toThrow(/UPSTREAM_BASE_URL/);
    expect(() => loadEnv(WorkerEnv, { ENGINE: 'openai', UPSTREAM_BASE_URL: 'http://vllm:8000' })).toThrow(/UPSTREAM_BASE_URL: must end in \/v1/);
    expect(() => loadEnv(WorkerEnv, { ENGINE: 'openai', UPSTREAM_BASE_URL: 'vllm:8000/v1' })).toThrow(/UPSTREAM_BASE_URL/);
    const env = loadEnv(WorkerEnv, { ENGINE: 'openai', UPSTREAM_BASE_URL: 'http://vllm:8000/v1', UPSTREAM_MAX_CONCURRENCY: '64' });
    expect([env.ENGINE, env.UPSTREAM_MAX_CONCURRENCY, env.UPSTREAM_MODEL, env.UPSTREAM_TIMEOUT_MS]).toEqual(['openai', 64, '', 60_000]);
  });

  it('refuses an upstream concurrency, timeout or model name that cannot be right', () => {
    const openai = { ENGINE: 'openai', UPSTREAM_BASE_URL: 'https://llm.internal/v1' };
    expect(() => loadEnv(WorkerEnv, { ...openai, UPSTREAM_MAX_CONCURRENCY: '0' })).toThrow(/UPSTREAM_MAX_CONCURRENCY/);
    expect(() => loadEnv(WorkerEnv, { ...openai, UPSTREAM_TIMEOUT_MS: '1.5' })).toThrow(/UPSTREAM_TIMEOUT_MS/);
    expect(() => loadEnv(WorkerEnv, { ...openai, UPSTREAM_MODEL: 'two words' })).toThrow(/UPSTREAM_MODEL/);
  });

  describe('secrets', () => {
    it('marks every secret-bearing variable of both apps, and nothing else, once in its env class', () => {
      const secretsOf = (config: object): string[] => Object.keys(config).filter((name) => isSecretEnv(config, name));
      expect(secretsOf(new ApiEnv())).toEqual([
        'REDIS_PASSWORD',
        'API_KEYS',
        'COMPACTION_KEYS',
        'PRIORITY_TIER_KEYS',
        'FAIR_SHARE_WEIGHTS',
        'ADMIN_PASSWORD',
        'METRICS_TOKEN',
        'MCP_SERVERS',
      ]);
      expect(secretsOf(new WorkerEnv())).toEqual(['REDIS_PASSWORD', 'UPSTREAM_API_KEY', 'METRICS_TOKEN']);
    });

    // Each secret variable that can be malformed, set to a malformed value: named, never shown.
    it.each([
      ['API_KEYS', ApiEnv, { API_KEYS: 'sk-secret-key-123456,short' }, ['sk-secret-key-123456', 'short']],
      ['API_KEYS', ApiEnv, { API_KEYS: 'qwerty uiop asdfgh' }, ['qwerty', 'uiop', 'asdfgh']],
      ['ADMIN_PASSWORD', ApiEnv, { ...API_BASE, ADMIN_PASSWORD: 'pw-2short' }, ['pw-2short']],
      ['METRICS_TOKEN', ApiEnv, { ...API_BASE, METRICS_TOKEN: 'zxcvb nm 0123456789' }, ['zxcvb', '0123456789']],
      ['METRICS_TOKEN', WorkerEnv, { METRICS_TOKEN: 'tok-9' }, ['tok-9']],
      ['UPSTREAM_API_KEY', WorkerEnv, { ...OPENAI_BASE, UPSTREAM_API_KEY: 'sk-upstream hjkl\n' }, ['sk-upstream', 'hjkl']],
    ] as const)('%s: a bad value is named but not shown', (name, envClass, env, values) => {
      const message = refusal(envClass, env);
      expect(message).toMatch(new RegExp(`${name}: .+ \\(value not shown: it is a secret\\)`));
      for (const value of values) expect(message).not.toContain(value);
    });

    it('shows a bad URL with its credentials masked', () => {
      expect(refusal(ApiEnv, { ...API_BASE, REDIS_URL: 'http://:hunter2-pw@redis:6379' })).toContain(
        'REDIS_URL: must be a redis:// or rediss:// URL (got "http://:***@redis:6379")',
      );
      expect(refusal(WorkerEnv, { REDIS_URL: 'redis://ops:hunter2 pw@redis:6379' })).toContain('(got "redis://ops:***@redis:6379")');
      const upstream = refusal(WorkerEnv, { ENGINE: 'openai', UPSTREAM_BASE_URL: 'http://user:up-pass-123@vllm:8000' });
      expect(upstream).toMatch(/UPSTREAM_BASE_URL: .*must end in \/v1/);
      expect(upstream).not.toContain('up-pass-123');
      const endpoint = refusal(ApiEnv, { ...API_BASE, FILES_S3_ENDPOINT: 'minio://AKIAKEY:s3-secret-9@minio:9000' });
      expect(endpoint).toContain('FILES_S3_ENDPOINT: must be an http:// or https:// URL (got "minio://AKIAKEY:***@minio:9000")');
      expect(endpoint).not.toContain('s3-secret-9');
    });

    it('refuses credentials in UPSTREAM_BASE_URL: the key has its own variable', () => {
      const message = refusal(WorkerEnv, { ENGINE: 'openai', UPSTREAM_BASE_URL: 'https://svc:up-pass-123@llm.internal/v1' });
      expect(message).toContain(
        'UPSTREAM_BASE_URL: must not carry credentials (user:password@): put the key in UPSTREAM_API_KEY (got "https://svc:***@llm.internal/v1")',
      );
      expect(loadEnv(WorkerEnv, { ...OPENAI_BASE, UPSTREAM_API_KEY: 'sk-upstream-0123' }).UPSTREAM_API_KEY).toBe('sk-upstream-0123');
    });
  });
});

describe('maskUrlCredentials', () => {
  it.each([
    ['redis://:hunter2@host:6379', 'redis://:***@host:6379'],
    ['rediss://default:p@ss@host:6380/0', 'rediss://default:***@host:6380/0'],
    ['https://token123@llm.internal/v1', 'https://***@llm.internal/v1'],
    ['two: redis://a:b@h1 and http://c:d@h2/x?y=e@f', 'two: redis://a:***@h1 and http://c:***@h2/x?y=e@f'],
    ['redis://host:6379/0 and user@example.com', 'redis://host:6379/0 and user@example.com'],
    ['"redis://ops:hunter2 pw@redis:6379"', '"redis://ops:***@redis:6379"'],
  ])('%s → %s', (text, masked) => {
    expect(maskUrlCredentials(text)).toBe(masked);
  });
});
