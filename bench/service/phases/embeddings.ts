import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { LlamaEmbeddingContext } from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import { startRedisServer } from '../../../tools/local-stack/redis-server';
import { REPO_ROOT, startApi, startWorker } from '../../../tools/local-stack/services';
import { makeShapeModel } from '../../../tools/tiny-model/model-shapes';
import { whenInterrupted } from '../../common/cleanup';
import { round, summarize } from '../../common/stats';
import type { EmbeddingsPlan } from '../bench-options';
import { ARTIFACTS_DIR } from '../../common/service-stack';
import type { EmbeddingsLevel, EmbeddingsThroughput } from '../results-model';

const API_KEY = 'sk-bench-embeddings-0123456789';

type Measured = EmbeddingsThroughput & { latencyMs: number[] };
const MODEL = 'bench-embed';

/** The models the phase measures: the generated tiny one, and one of a real shape (made here the first time, in seconds). */
function benchModels(plan: EmbeddingsPlan): Array<{ name: string; path: string }> {
  return plan.models.map((name) => {
    if (name === 'tiny-embed') return { name, path: resolve(REPO_ROOT, 'models/tiny-embed.gguf') };
    const path = resolve(REPO_ROOT, `models/${name}-f16-mean.gguf`);
    if (!existsSync(path)) makeShapeModel({ shape: name, type: 'f16', seed: 1, pooling: 'mean', out: path });
    return { name: `${name} (mean pooling)`, path };
  });
}

const WORDS = ['rabbit', 'watch', 'hole', 'queen', 'hearts', 'tarts', 'hatter', 'tea', 'dormouse', 'cat', 'grin', 'garden', 'door', 'key', 'bottle', 'cake'];

/** Request `index`'s inputs: `count` sentences of about `words` words each, all different. */
function inputsOf(index: number, count: number, words: number): string[] {
  return Array.from({ length: count }, (_, input) => {
    const seed = index * count + input;
    return Array.from({ length: words }, (_, word) => WORDS[(seed * 7 + word * 3 + (seed >> 4)) % WORDS.length]).join(' ') + ` ${seed}.`;
  });
}

/**
 * node-llama-cpp as its users call it: one embedding context, one input at a time, for
 * `durationMs`, with `threads` threads.
 */
async function engineAlone(path: string, plan: EmbeddingsPlan, threads: number): Promise<EmbeddingsThroughput> {
  const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');
  const llama = await getLlama({ gpu: false, build: 'never', maxThreads: threads, logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath: path });
  const context: LlamaEmbeddingContext = await model.createEmbeddingContext({ contextSize: plan.contextSize, batchSize: plan.contextSize, threads });
  try {
    for (const input of inputsOf(-1, 8, plan.wordsPerInput)) await context.getEmbeddingFor(input);
    let embeddings = 0;
    let tokens = 0;
    const started = performance.now();
    for (let request = 0; performance.now() - started < plan.durationMs; request++) {
      for (const input of inputsOf(request, plan.inputsPerRequest, plan.wordsPerInput)) {
        tokens += context.calculateInputLength(input);
        await context.getEmbeddingFor(input);
        embeddings += 1;
      }
    }
    const seconds = (performance.now() - started) / 1000;
    return { embeddingsPerSecond: round(embeddings / seconds, 1), inputTokensPerSecond: round(tokens / seconds, 1), errors: 0 };
  } finally {
    await context.dispose();
    await model.dispose();
    await llama.dispose();
  }
}

/** `concurrency` clients sending requests of `inputsPerRequest` inputs back to back for `durationMs` (base64, as the openai package asks). */
async function serviceLoad(
  baseUrl: string,
  concurrency: number,
  plan: EmbeddingsPlan,
  firstIndex: number,
): Promise<EmbeddingsThroughput & { latencyMs: number[] }> {
  let embeddings = 0;
  let tokens = 0;
  let errors = 0;
  let next = firstIndex;
  const latencyMs: number[] = [];
  const started = performance.now();
  const client = async (): Promise<void> => {
    while (performance.now() - started < plan.durationMs) {
      const sent = performance.now();
      const response = await fetch(`${baseUrl}/embeddings`, {
        method: 'POST',
        headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL, input: inputsOf(next++, plan.inputsPerRequest, plan.wordsPerInput), encoding_format: 'base64' }),
      });
      const body = (await response.json()) as { data?: unknown[]; usage?: { prompt_tokens: number } };
      if (response.status !== 200 || !body.data) {
        errors += 1;
        continue;
      }
      latencyMs.push(performance.now() - sent);
      embeddings += body.data.length;
      tokens += body.usage?.prompt_tokens ?? 0;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, client));
  const seconds = (performance.now() - started) / 1000;
  return { embeddingsPerSecond: round(embeddings / seconds, 1), inputTokensPerSecond: round(tokens / seconds, 1), errors, latencyMs };
}

/**
 * The engine alone at its best of the thread counts the service's configurations use in all: on
 * a small machine more threads can be slower (llama.cpp's threads spin-wait for each other).
 */
async function bestEngineAlone(path: string, plan: EmbeddingsPlan): Promise<EmbeddingsThroughput & { threads: number }> {
  const candidates = [...new Set(plan.configs.map(({ contexts, threads }) => contexts * threads))].sort((a, b) => a - b);
  let best: (EmbeddingsThroughput & { threads: number }) | undefined;
  for (const threads of candidates) {
    const run = { ...(await engineAlone(path, plan, threads)), threads };
    if (!best || run.embeddingsPerSecond > best.embeddingsPerSecond) best = run;
  }
  return best!;
}

/** The service (Redis, API, a worker with `contexts` embedding contexts of `threads` threads each) at each of the plan's levels. */
async function serviceLevels(
  path: string,
  name: string,
  plan: EmbeddingsPlan,
  { contexts, threads }: EmbeddingsPlan['configs'][number],
): Promise<Array<{ concurrency: number; result: Measured }>> {
  const label = `embeddings-${contexts}x${threads}`;
  const logFile = (part: string): string => resolve(ARTIFACTS_DIR, 'logs', `${label}-${part}.log`);
  const redis = await startRedisServer({ logFile: logFile('redis') });
  const stops: Array<() => Promise<unknown>> = [() => redis.stop()];
  const forget = whenInterrupted(() => Promise.allSettled([...stops].reverse().map((stop) => stop())));
  const measured: Array<{ concurrency: number; result: Measured }> = [];
  try {
    const worker = await startWorker({
      redisUrl: redis.url,
      modelName: MODEL,
      modelPath: path,
      parallelSequences: plan.jobSlots,
      threads,
      env: { GPU: 'false', CONTEXT_SIZE: String(plan.contextSize), EMBEDDING_CONTEXTS: String(contexts), HEALTH_PORT: '0' },
      logFile: logFile('worker'),
    });
    stops.push(() => worker.stop('SIGTERM', 5000));
    // Throughput, not admission control, is measured: nothing is refused for waiting.
    const env = { MAX_WAITING_JOBS: '1000000', MAX_QUEUE_WAIT_MS: '600000' };
    const api = await startApi({ redisUrl: redis.url, apiKeys: [API_KEY], models: [MODEL], processes: 1, env, logFile: logFile('api') });
    stops.push(() => api.process.stop('SIGTERM', 5000));
    await serviceLoad(api.baseUrl, 4, { ...plan, durationMs: 1000 }, -1000);
    for (const [index, concurrency] of plan.levels.entries()) {
      const result = await serviceLoad(api.baseUrl, concurrency, plan, (index + 1) * 100_000);
      console.log(
        `  ${name}, ${contexts} × ${threads} threads, c=${concurrency}: ${result.embeddingsPerSecond} embeddings/s, ${result.inputTokensPerSecond} input tokens/s, ${result.errors} errors`,
      );
      measured.push({ concurrency, result });
    }
  } finally {
    forget();
    for (const stop of stops.reverse()) await stop();
  }
  return measured;
}

/**
 * Embeddings per second and input tokens per second: node-llama-cpp alone (one embedding
 * context, calls one after another, at its best thread count) against the service with each
 * of the plan's worker configurations (EMBEDDING_CONTEXTS × ENGINE_THREADS), at each
 * concurrency, in requests of `inputsPerRequest` inputs. The engine alone runs before and after
 * the service; its two runs are averaged.
 */
export async function runEmbeddings(plan: EmbeddingsPlan): Promise<EmbeddingsLevel[]> {
  const levels: EmbeddingsLevel[] = [];
  for (const { name, path } of benchModels(plan)) {
    const before = await bestEngineAlone(path, plan);
    const runs: Array<{ config: EmbeddingsPlan['configs'][number]; concurrency: number; result: Measured }> = [];
    for (const config of plan.configs) runs.push(...(await serviceLevels(path, name, plan, config)).map((run) => ({ ...run, config })));
    const after = await bestEngineAlone(path, plan);
    const engine: EmbeddingsThroughput = {
      embeddingsPerSecond: round((before.embeddingsPerSecond + after.embeddingsPerSecond) / 2, 1),
      inputTokensPerSecond: round((before.inputTokensPerSecond + after.inputTokensPerSecond) / 2, 1),
      errors: 0,
    };
    console.log(
      `  ${name} engine alone: ${before.embeddingsPerSecond} (${before.threads} threads) then ${after.embeddingsPerSecond} (${after.threads} threads) embeddings/s`,
    );
    for (const { config, concurrency, result } of runs) {
      const { embeddingsPerSecond, inputTokensPerSecond, errors, latencyMs } = result;
      levels.push({
        model: name,
        contexts: config.contexts,
        threadsPerContext: config.threads,
        concurrency,
        inputsPerRequest: plan.inputsPerRequest,
        engine,
        engineRuns: [`${before.embeddingsPerSecond} (${before.threads} threads)`, `${after.embeddingsPerSecond} (${after.threads} threads)`],
        service: { embeddingsPerSecond, inputTokensPerSecond, errors },
        requestLatencyMs: summarize(latencyMs),
        ratio: round(embeddingsPerSecond / engine.embeddingsPerSecond, 3),
      });
    }
  }
  return levels;
}
