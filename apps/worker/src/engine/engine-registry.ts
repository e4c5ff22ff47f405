import { Logger } from '@nestjs/common';
import type { WorkerEnv } from '@app/config';
import { GenerationAbortedError } from './inference-engine';
import type { InferenceEngine } from './inference-engine';
import { LlamaCppEngine } from './llama-cpp.engine';
import { OpenAiUpstreamEngine } from './openai-upstream.engine';
import { SyntheticEngine } from './synthetic.engine';

const logger = new Logger('InferenceEngine');

/** The engines a worker can run, by the name `ENGINE` gives; each builds itself from the environment. */
const ENGINES: Record<WorkerEnv['ENGINE'], (env: WorkerEnv) => Promise<InferenceEngine>> = {
  llama: (env) =>
    LlamaCppEngine.load({
      modelPath: env.MODEL_PATH,
      parallelSequences: env.PARALLEL_SEQUENCES,
      threads: env.ENGINE_THREADS,
      contextSize: env.CONTEXT_SIZE,
      gpu: env.GPU === 'false' ? false : env.GPU,
      log: (message) => logger.log(message),
    }),
  openai: (env) =>
    Promise.resolve(
      new OpenAiUpstreamEngine({
        baseUrl: env.UPSTREAM_BASE_URL,
        apiKey: env.UPSTREAM_API_KEY,
        model: env.UPSTREAM_MODEL || env.MODEL_NAME,
        maxConcurrency: env.UPSTREAM_MAX_CONCURRENCY,
        timeoutMs: env.UPSTREAM_TIMEOUT_MS,
        contextSize: env.CONTEXT_SIZE,
      }),
    ),
  // Benchmarks only: measures the service around an engine of known speed.
  synthetic: (env) =>
    Promise.resolve(
      new SyntheticEngine({
        tokens: env.SYNTHETIC_TOKENS,
        tokenIntervalMs: env.SYNTHETIC_TOKEN_INTERVAL_MS,
        slots: env.SYNTHETIC_SLOTS,
        contextSize: env.CONTEXT_SIZE,
      }),
    ),
};

/** How long the boot self-test may take before the worker gives up on its engine. */
const SELF_TEST_TIMEOUT_MS = 60_000;

/**
 * Generates a few tokens before the worker announces itself or takes a job, so a worker whose
 * engine cannot generate (a broken backend, a model that does not load right) fails at boot with
 * a message, not on its first user's request.
 */
export async function selfTest(engine: InferenceEngine): Promise<void> {
  // The first output proves generation works; the rest is not waited for (a slow engine, or
  // the synthetic one with a long token interval, would only delay the boot).
  const enough = new AbortController();
  let parts = 0;
  try {
    await engine.generate({
      messages: [{ role: 'user', content: 'Hello' }],
      sampling: { temperature: 0, topP: 1, maxTokens: 2, stop: [], frequencyPenalty: 0, presencePenalty: 0, seed: 1 },
      signal: AbortSignal.any([enough.signal, AbortSignal.timeout(SELF_TEST_TIMEOUT_MS)]),
      output: {
        write: () => {
          parts += 1;
          enough.abort();
        },
      },
    });
  } catch (error) {
    if (!(error instanceof GenerationAbortedError && parts > 0)) {
      throw new Error(`engine ${engine.name} failed its self-test: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  }
  if (parts === 0) throw new Error(`engine ${engine.name} failed its self-test: it generated no output`);
}

/** Loads the configured engine and proves it can generate. */
export async function loadEngine(env: WorkerEnv): Promise<InferenceEngine> {
  const engine = await ENGINES[env.ENGINE](env);
  try {
    // Logged first: a backend that aborts the process in native code is named in the log.
    logger.log(`self-test: ${engine.name} generates a few tokens before the worker takes jobs`);
    await selfTest(engine);
    logger.log(`self-test passed: ${engine.name}`);
  } catch (error) {
    await engine.close().catch(() => undefined);
    throw error;
  }
  return engine;
}
