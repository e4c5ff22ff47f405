import { WORKER_REGISTRY_KEYS } from '@app/contracts';
import { Redis } from 'ioredis';
import { ManagedProcess } from '../../tools/local-stack/managed-process';
import { WORKER_ENTRY } from '../../tools/local-stack/services';
import { e2eStack } from '../support/stack-env';

/**
 * A worker never takes a job it cannot run: a backend that cannot be had stops it at boot with a
 * message that says so, before it announces itself or opens its queue; a worker that can
 * generate says so after its self-test, and only then takes jobs.
 */
describe('worker boot', () => {
  const stack = e2eStack();

  function bootWorker(workerId: string, env: Record<string, string>): ManagedProcess {
    return new ManagedProcess({
      name: workerId,
      command: process.execPath,
      args: [WORKER_ENTRY],
      env: {
        ...process.env,
        REDIS_URL: stack.redisUrl,
        MODEL_NAME: 'boot-check',
        MODEL_PATH: stack.modelPath,
        ENGINE_THREADS: '1',
        PARALLEL_SEQUENCES: '1',
        HEALTH_PORT: '0',
        WORKER_ID: workerId,
        ...env,
      },
    });
  }

  it('exits non-zero, naming the backend, when GPU=cuda cannot be honoured, and never announces itself', async () => {
    const worker = bootWorker('boot-cuda', { GPU: 'cuda' });
    const code = await worker.exit;
    expect(code).not.toBe(0);
    expect(worker.recentOutput).toMatch(/GPU=cuda: no usable llama\.cpp build/);
    const redis = new Redis(stack.redisUrl);
    try {
      expect(await redis.hexists(WORKER_REGISTRY_KEYS.announcements, 'boot-cuda')).toBe(0);
    } finally {
      await redis.quit();
    }
  });

  it('logs the backend it got and passes its self-test before it is ready', async () => {
    const worker = bootWorker('boot-cpu', { GPU: 'auto' });
    try {
      await worker.waitForOutput(/worker boot-cpu ready/, 60_000);
      const output = worker.recentOutput;
      expect(output).toMatch(/llama\.cpp backend cpu \(GPU=auto\), 0 layers offloaded/);
      const passedAt = output.indexOf('self-test passed');
      expect(passedAt).toBeGreaterThan(-1);
      expect(passedAt).toBeLessThan(output.indexOf('worker boot-cpu ready'));
    } finally {
      await worker.stop('SIGTERM', 10_000);
    }
  });
});
