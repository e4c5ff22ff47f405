import { Logger } from '@nestjs/common';
import type { WorkerEnv } from '@app/config';
import type { InferenceEngine } from './inference-engine';
import { LlamaServerEngine } from './llama-server/llama-server.engine';
import { OpenAiUpstreamEngine } from './openai-upstream.engine';
import { SyntheticEngine } from './synthetic.engine';
import { ThreadedEngine } from './thread/threaded-engine';

const logger = new Logger('InferenceEngine');

/** Where an engine says what it loaded (for llama.cpp: the backend and devices it got). */
export type EngineLog = (message: string) => void;

/**
 * A worker whose engine thread died would fail every job it takes: it stops instead (gracefully:
 * the running jobs have already failed), and whatever restarts workers starts a new one.
 */
function stopWithoutEngine(error: Error): void {
  logger.error(`${error.message}: the worker stops`);
  process.exitCode = 1;
  process.kill(process.pid, 'SIGTERM');
}

/** The engines a worker can run, by the name `ENGINE` gives; each builds itself from the environment. */
const ENGINES: Record<WorkerEnv['ENGINE'], (env: WorkerEnv, log: EngineLog) => Promise<InferenceEngine>> = {
  llama: (env, log) =>
    ThreadedEngine.startLlama(
      {
        modelPath: env.MODEL_PATH,
        parallelSequences: env.PARALLEL_SEQUENCES + env.EXPRESS_SEQUENCES,
        threads: env.ENGINE_THREADS,
        contextSize: env.CONTEXT_SIZE,
        gpu: env.GPU,
        promptCache: env.PROMPT_CACHE,
        embeddings: env.EMBEDDINGS,
        embeddingContexts: env.EMBEDDING_CONTEXTS,
      },
      { log, onThreadLost: stopWithoutEngine, cpus: env.ENGINE_CPUS || undefined },
    ),
  'llama-server': (env, log) =>
    LlamaServerEngine.start({
      modelPath: env.MODEL_PATH,
      slots: env.PARALLEL_SEQUENCES + env.EXPRESS_SEQUENCES,
      contextSize: env.CONTEXT_SIZE,
      threads: env.ENGINE_THREADS,
      gpu: env.GPU,
      cpus: env.ENGINE_CPUS,
      binary: env.LLAMA_SERVER_BIN,
      url: env.LLAMA_SERVER_URL,
      promptCache: env.PROMPT_CACHE,
      log,
      onLost: stopWithoutEngine,
    }),
  openai: (env) =>
    Promise.resolve(
      new OpenAiUpstreamEngine({
        baseUrl: env.UPSTREAM_BASE_URL,
        apiKey: env.UPSTREAM_API_KEY,
        model: env.UPSTREAM_MODEL || env.MODEL_NAME,
        maxConcurrency: env.UPSTREAM_MAX_CONCURRENCY + env.EXPRESS_SEQUENCES,
        timeoutMs: env.UPSTREAM_TIMEOUT_MS,
        contextSize: env.CONTEXT_SIZE,
        kinds: env.UPSTREAM_KINDS,
      }),
    ),
  // Benchmarks only: measures the service around an engine of known speed.
  synthetic: (env) =>
    Promise.resolve(
      new SyntheticEngine({
        tokens: env.SYNTHETIC_TOKENS,
        tokenIntervalMs: env.SYNTHETIC_TOKEN_INTERVAL_MS,
        slots: env.SYNTHETIC_SLOTS + env.EXPRESS_SEQUENCES,
        contextSize: env.CONTEXT_SIZE,
      }),
    ),
};

/**
 * Loads the configured engine. The worker proves first, in a child process, that an engine loaded
 * this way can generate (see boot/isolated-self-test.ts): a native abort there cannot take the
 * worker down with it.
 */
export function loadEngine(env: WorkerEnv, log: EngineLog = (message) => logger.log(message)): Promise<InferenceEngine> {
  return ENGINES[env.ENGINE](env, log);
}
