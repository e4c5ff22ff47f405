import { ApiEnv } from './api-env';
import { InvalidEnvironmentError, loadEnv } from './load-env';
import { WorkerEnv } from './worker-env';

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
});
