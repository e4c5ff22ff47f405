import { WORKER_REGISTRY_KEYS, completionQueueName, completionQueuePrefix } from '@app/contracts';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManagedProcess } from '../../tools/local-stack/managed-process';
import { WORKER_ENTRY } from '../../tools/local-stack/services';
import { buildBigramModel } from '../../tools/tiny-model/bigram-model';
import { writeGguf } from '../../tools/tiny-model/gguf-writer';
import type { GgufMetadata, GgufValue } from '../../tools/tiny-model/gguf-writer';
import { e2eStack } from '../support/stack-env';

/**
 * The tiny model as a llama.cpp architecture ("nanbeige": the same tensors as llama) that checks
 * its rotary dimension count nowhere before computing, given an odd one: the model loads, and the
 * CPU's RoPE kernel then fails an assertion (GGML_ASSERT, so abort(): SIGABRT) at the first
 * decode, just as a CUDA build whose PTX the driver cannot JIT aborts on its first kernel.
 */
function writeModelThatAbortsAtDecode(path: string): void {
  const model = buildBigramModel({ name: 'aborts-at-decode', corpus: 'alice' });
  const metadata: GgufMetadata = model.metadata.map(([key, value]): readonly [string, GgufValue] => {
    if (key === 'general.architecture') return [key, { type: 'string', value: 'nanbeige' }];
    const renamed = key.replace(/^llama\./, 'nanbeige.');
    return renamed.endsWith('.rope.dimension_count') ? [renamed, { type: 'uint32', value: 63 }] : [renamed, value];
  });
  writeFileSync(path, writeGguf({ metadata, tensors: model.tensors }));
}

/**
 * A worker never takes a job it cannot run: a backend that cannot be had stops it at boot with a
 * message that says so, before it announces itself or opens its queue; so does an engine that
 * loads but kills the process when it generates (the self-test runs in a child process); a worker
 * that can generate says so after its self-test, and only then takes jobs.
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

  it('exits non-zero with one clear line when its engine loads but aborts the process generating, and never announces itself or takes a job', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'worker-boot-'));
    const modelPath = join(directory, 'aborts-at-decode.gguf');
    writeModelThatAbortsAtDecode(modelPath);
    const model = 'boot-abort';
    const redis = new Redis(stack.redisUrl);
    const queue = new Queue(completionQueueName(model), { connection: redis, prefix: completionQueuePrefix(model) });
    try {
      // A job already waits for this model: a worker that opened its queue would take it.
      await queue.add('completion', { probe: true });
      const worker = bootWorker('boot-abort', { MODEL_NAME: model, MODEL_PATH: modelPath, GPU: 'false' });
      const code = await worker.exit;
      const output = worker.recentOutput;

      expect(code).toBe(1);
      // llama.cpp's own reason, from the child it killed, then the worker's one line.
      expect(output).toMatch(/GGML_ASSERT\(n_dims % 2 == 0\) failed/);
      expect(output).toMatch(
        /^worker self-test failed: the llama\.cpp backend 'cpu' aborted \(SIGABRT\) while generating with \S*aborts-at-decode\.gguf; .*see docs\/gpu\.md, "CUDA images"$/m,
      );
      expect(output).not.toMatch(/self-test passed|worker boot-abort ready/);
      expect(await redis.hexists(WORKER_REGISTRY_KEYS.announcements, 'boot-abort')).toBe(0);
      expect(await queue.getJobCounts('waiting', 'active', 'completed', 'failed')).toEqual({ waiting: 1, active: 0, completed: 0, failed: 0 });
    } finally {
      await queue.obliterate({ force: true });
      await queue.close();
      await redis.quit();
      rmSync(directory, { recursive: true, force: true });
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
