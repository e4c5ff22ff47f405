import { Logger } from '@nestjs/common';
import type { WorkerEnv } from '@app/config';
import { fork } from 'node:child_process';
import { extname, join } from 'node:path';

/** What the worker sends the self-test process: its validated environment, as plain data. */
export interface SelfTestRequest {
  env: WorkerEnv;
}

/** What the self-test process reports, in this order, before it exits. */
export type SelfTestReport =
  /** A line the engine logged while loading; for llama.cpp it names the backend it got. */
  | { type: 'engine-log'; message: string }
  | { type: 'generating' }
  | { type: 'passed' }
  /** An error the process could still catch and report (a native abort reports nothing). */
  | { type: 'failed'; message: string };

/** The child's entry point, beside this file (`.js` in dist/, `.ts` when run through tsx). */
const CHILD_ENTRY = join(__dirname, `self-test-child${extname(__filename)}`);

/** Signals by which native code dies: an abort (a failed assertion in llama.cpp or CUDA), a bad access, an unsupported instruction. */
const CRASH_SIGNALS = new Set<NodeJS.Signals>(['SIGABRT', 'SIGSEGV', 'SIGBUS', 'SIGILL', 'SIGFPE']);

const logger = new Logger('SelfTest');

/**
 * Loads the configured engine in a child process, with the worker's own settings, and has it
 * generate a few tokens; resolves when that worked. A backend that aborts the process in native
 * code (CUDA "PTX was compiled with an unsupported toolchain", a llama.cpp assertion) kills only
 * the child, and the worker fails with one line that says what died, when, and with which model,
 * before it announces itself or takes a job. The child exits before the worker loads the engine
 * itself, so the model is never in (GPU) memory twice.
 */
export async function selfTestInChildProcess(env: WorkerEnv): Promise<void> {
  const llama = env.ENGINE === 'llama' || env.ENGINE === 'llama-server';
  const subject = llama ? env.MODEL_PATH : env.MODEL_NAME;
  logger.log(
    `self-test: in a child process, the ${env.ENGINE} engine ${llama ? `loads ${subject} and ` : ''}runs each kind of job it serves once (a few tokens, a vector) before the worker takes jobs`,
  );
  const child = fork(CHILD_ENTRY, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], serialization: 'json' });
  // What the child has reported so far: how far it got, the backend it named, the error it caught.
  const heard: { stage: 'loading' | 'generating' | 'passed'; backend?: string; failure?: string } = { stage: 'loading' };
  child.on('message', (report: SelfTestReport) => {
    if (report.type === 'engine-log') {
      heard.backend = /^llama\.cpp backend (\S+)/.exec(report.message)?.[1] ?? heard.backend;
      logger.log(report.message);
    } else if (report.type === 'failed') heard.failure = report.message;
    else heard.stage = report.type;
  });
  const request: SelfTestRequest = { env };
  child.send(request);

  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (exitCode, exitSignal) => resolve([exitCode, exitSignal]));
  });
  if (code === 0 && heard.stage === 'passed') {
    logger.log(`self-test passed: the ${env.ENGINE} engine ran with ${subject}`);
    return;
  }
  if (heard.failure !== undefined) throw new Error(`worker self-test failed: ${heard.failure}`);

  const what = heard.backend ? `the llama.cpp backend '${heard.backend}'` : llama ? `llama.cpp (GPU=${env.GPU})` : `the ${env.ENGINE} engine`;
  const when = heard.stage === 'loading' ? `while loading ${subject}` : `while generating with ${subject}`;
  if (signal && CRASH_SIGNALS.has(signal)) {
    const verb = signal === 'SIGABRT' ? 'aborted' : 'crashed';
    const why = llama
      ? `; this llama.cpp build cannot run that model on this machine's GPU, driver or CPU (llama.cpp's own message is in the lines above) — see docs/gpu.md, "CUDA images"`
      : '';
    throw new Error(`worker self-test failed: ${what} ${verb} (${signal}) ${when}${why}`);
  }
  const how = signal ? `was killed (${signal}${signal === 'SIGKILL' ? ', out of memory?' : ''})` : `exited with code ${String(code)}`;
  throw new Error(`worker self-test failed: the process testing ${what} ${how} ${when}`);
}
