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
});
