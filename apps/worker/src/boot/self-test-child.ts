/**
 * The self-test process (forked by isolated-self-test.ts): loads the engine with the worker's
 * settings, generates a few tokens, reports each step to the worker and exits. Whatever native
 * code does to it here, the worker only sees how it ended.
 */
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { WorkerEnv, logLevelsUpTo } from '@app/config';
import { loadEngine } from '../engine/engine-registry';
import type { SelfTestReport, SelfTestRequest } from './isolated-self-test';
import { selfTest } from './self-test';

/** Resolves once the report is handed to the IPC channel, so that exiting right after loses none. */
function report(message: SelfTestReport): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send) resolve();
    else process.send(message, undefined, undefined, () => resolve());
  });
}

async function run({ env: plain }: SelfTestRequest): Promise<void> {
  // Already validated by the worker: the same values, typed again.
  const env = Object.assign(new WorkerEnv(), plain);
  Logger.overrideLogger(logLevelsUpTo(env.LOG_LEVEL));
  // The worker logs these lines, and names the backend in its message if what follows kills this process.
  const engine = await loadEngine(env, (message) => void report({ type: 'engine-log', message }));
  await report({ type: 'generating' });
  await selfTest(engine);
  // No unloading: exiting frees the model's memory at once, on the GPU too, before the worker loads it.
  await report({ type: 'passed' });
}

if (!process.send) {
  console.error('self-test-child runs only as a child process of the worker');
  process.exit(2);
}
// A worker that dies or is stopped meanwhile takes its self-test with it.
process.once('disconnect', () => process.exit(1));
process.once('message', (request: SelfTestRequest) => {
  run(request).then(
    () => process.exit(0),
    async (error: unknown) => {
      await report({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
      process.exit(1);
    },
  );
});
