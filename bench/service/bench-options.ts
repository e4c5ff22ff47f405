import { availableParallelism } from 'node:os';
import type { EngineSpec, GpuSetting, LoadPlan } from '../common/driver-protocol';

/**
 * What `npm run bench` runs: the full plan (about 6-9 minutes on 2 cores) or `--quick` (about a
 * minute, fewer levels and shorter runs). `--profile` also CPU-profiles the API process during
 * the synthetic phases and reports its top self-time functions (with `--api-processes=1`).
 * `--only=llama,synthetic,relay,open-streams,non-stream,embeddings` runs some phases only.
 * `--api-processes=N` sets the API's API_PROCESSES for the throughput phases (default: as
 * deployed, one per core); the open-streams phase measures one process.
 */
export type PhaseName = 'llama' | 'synthetic' | 'relay' | 'open-streams' | 'non-stream' | 'embeddings';
export const PHASES: PhaseName[] = ['llama', 'synthetic', 'relay', 'open-streams', 'non-stream', 'embeddings'];

export interface LlamaPlan {
  parallelSequences: number;
  threads: number;
  contextSize: number;
  maxTokens: number;
  /** Concurrency level → measured requests. */
  levels: Array<{ concurrency: number; requests: number }>;
  /** Levels up to this concurrency are repeated `repeats` times; above it, run once. */
  repeatUpTo: number;
  repeats: number;
  /**
   * ENGINE_CPUS of both sides (a Linux CPU list): llama.cpp's threads there, the benchmark's other
   * processes (load generator, API, Redis, the worker's main thread) on the other CPUs.
   */
  engineCpus?: string;
}

export interface SyntheticPlan {
  tokens: number;
  tokenIntervalMs: number;
  levels: number[];
  roundsPerClient: number;
  durationMs: number;
  repeats: number;
}

/**
 * Delta events relayed per second: each level holds `streams` streams whose tokens come
 * `tokenIntervalMs` apart (never closer than the worker's 5 ms coalescing, so one token is one
 * event), each stream lasting about `streamSeconds`. The offered rate is streams × 1000 / interval.
 */
export interface RelayPlan {
  levels: Array<{ streams: number; tokenIntervalMs: number }>;
  streamSeconds: number;
  roundsPerClient: number;
  durationMs: number;
  repeats: number;
}

export interface OpenStreamsPlan {
  levels: number[];
  openBatch: number;
}

export interface NonStreamPlan {
  levels: number[];
  durationMs: number;
  repeats: number;
}

/** Embeddings per second: node-llama-cpp alone against the service, requests of `inputsPerRequest` inputs at each level. */
export interface EmbeddingsPlan {
  /** `tiny-embed`, or a shape name (model-shapes.ts) made into a mean-pooled embedding model. */
  models: Array<'tiny-embed' | 'llama-50m' | 'qwen-0.5b'>;
  levels: number[];
  inputsPerRequest: number;
  wordsPerInput: number;
  durationMs: number;
  /** The worker configurations to measure: EMBEDDING_CONTEXTS and ENGINE_THREADS (each context's). */
  configs: Array<{ contexts: number; threads: number }>;
  contextSize: number;
  /** The worker's PARALLEL_SEQUENCES: embed jobs it takes at once. */
  jobSlots: number;
}

export interface BenchOptions {
  mode: 'full' | 'quick';
  profile: boolean;
  apiProcesses: number;
  phases: Set<PhaseName>;
  llama: LlamaPlan;
  /** Time to first token and inter-token latency around an engine of known speed. */
  synthetic: SyntheticPlan;
  /** Delta events relayed per second: long streams, so that request set-up does not dominate. */
  relay: RelayPlan;
  openStreams: OpenStreamsPlan;
  nonStream: NonStreamPlan;
  embeddings: EmbeddingsPlan;
}

/** The full run's plan (`npm run bench` without `--quick`). */
export const FULL_PLAN: Omit<BenchOptions, 'mode' | 'profile' | 'phases' | 'apiProcesses'> = {
  llama: {
    parallelSequences: 4,
    threads: 1,
    contextSize: 4096,
    maxTokens: 64,
    levels: [
      { concurrency: 1, requests: 96 },
      { concurrency: 10, requests: 200 },
      { concurrency: 100, requests: 400 },
      { concurrency: 1000, requests: 1000 },
    ],
    repeatUpTo: 100,
    repeats: 2,
  },
  synthetic: { tokens: 64, tokenIntervalMs: 10, levels: [1, 10, 100, 1000, 2000], roundsPerClient: 4, durationMs: 5000, repeats: 2 },
  relay: {
    levels: [
      { streams: 500, tokenIntervalMs: 10 },
      { streams: 1000, tokenIntervalMs: 10 },
      { streams: 2000, tokenIntervalMs: 20 },
      { streams: 5000, tokenIntervalMs: 50 },
    ],
    streamSeconds: 3,
    roundsPerClient: 2,
    durationMs: 5000,
    repeats: 2,
  },
  openStreams: { levels: [1, 1000, 5000, 10000], openBatch: 250 },
  nonStream: { levels: [1, 10, 100, 1000], durationMs: 5000, repeats: 2 },
  embeddings: {
    models: ['tiny-embed', 'llama-50m'],
    levels: [1, 8, 64],
    inputsPerRequest: 16,
    wordsPerInput: 24,
    durationMs: 8000,
    configs: [
      { contexts: 1, threads: 1 },
      { contexts: 2, threads: 1 },
      { contexts: 1, threads: 2 },
    ],
    contextSize: 512,
    jobSlots: 8,
  },
};

const QUICK: typeof FULL_PLAN = {
  llama: {
    ...FULL_PLAN.llama,
    levels: [
      { concurrency: 1, requests: 32 },
      { concurrency: 10, requests: 80 },
    ],
    repeatUpTo: 10,
    repeats: 1,
  },
  synthetic: { ...FULL_PLAN.synthetic, levels: [1, 100, 1000], roundsPerClient: 3, durationMs: 3000, repeats: 1 },
  relay: { ...FULL_PLAN.relay, levels: [{ streams: 1000, tokenIntervalMs: 10 }], roundsPerClient: 1, durationMs: 3000, repeats: 1 },
  openStreams: { levels: [1, 1000, 5000], openBatch: 250 },
  nonStream: { levels: [100], durationMs: 4000, repeats: 1 },
  embeddings: { ...FULL_PLAN.embeddings, models: ['tiny-embed'], levels: [1, 8], durationMs: 3000, configs: [{ contexts: 2, threads: 1 }] },
};

export function parseOptions(argv: string[]): BenchOptions {
  const known = new Set(['--quick', '--profile']);
  const only = argv.find((arg) => arg.startsWith('--only='));
  const processes = argv.find((arg) => arg.startsWith('--api-processes='));
  for (const arg of argv) {
    if (!known.has(arg) && arg !== only && arg !== processes) {
      throw new Error(`unknown option ${arg} (use --quick, --profile, --api-processes=N, --only=${PHASES.join(',')})`);
    }
  }
  const apiProcesses = processes ? Number(processes.slice('--api-processes='.length)) : availableParallelism();
  if (!Number.isInteger(apiProcesses) || apiProcesses < 1) throw new Error(`${processes} is not a whole number of processes`);
  const profile = argv.includes('--profile');
  if (profile && apiProcesses > 1) throw new Error('--profile profiles one API process: add --api-processes=1');
  const phases = only ? only.slice('--only='.length).split(',') : PHASES;
  for (const phase of phases) if (!PHASES.includes(phase as PhaseName)) throw new Error(`unknown phase ${phase}`);
  const quick = argv.includes('--quick');
  return { mode: quick ? 'quick' : 'full', profile, apiProcesses, phases: new Set(phases as PhaseName[]), ...(quick ? QUICK : FULL_PLAN) };
}

/** A closed loop of streamed requests, warmed up with one-token answers; a level the service cannot keep up with still ends. */
export function streamPlan(concurrency: number, requests: number, durationMs: number, maxTokens: number): LoadPlan {
  return {
    concurrency,
    requests,
    durationMs,
    // What is under way by then is abandoned.
    hardStopMs: durationMs * 3 + 15_000,
    warmupRequests: concurrency,
    warmupMaxTokens: 1,
    stream: true,
    maxTokens,
    requestTimeoutMs: 120_000,
  };
}

/** The llama phase's engine, alone and in the worker: `modelPath` on the `gpu` backend, with the plan's sequences, threads and context. */
export function llamaEngine(llama: LlamaPlan, modelPath: string, gpu: GpuSetting): Extract<EngineSpec, { modelPath: string }> {
  const { parallelSequences, threads, contextSize, engineCpus } = llama;
  return { kind: 'llama', modelPath, gpu, parallelSequences, threads, contextSize, engineCpus };
}

/** One level of the llama phase: answers of a slow model may take long, so it runs up to 120 s and is abandoned at 180 s. */
export function llamaLevelPlan(llama: LlamaPlan, concurrency: number, requests: number): LoadPlan {
  return { ...streamPlan(concurrency, requests, 120_000, llama.maxTokens), hardStopMs: 180_000 };
}
