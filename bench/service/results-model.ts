import type { LoadResult } from '../common/driver-protocol';
import { round, spreadOf, standardError } from '../common/stats';
import type { Spread, Summary } from '../common/stats';

/** Latency percentiles as reported (milliseconds). */
export interface Percentiles {
  p50: number;
  p95: number;
  p99: number;
}

/**
 * One side (engine alone or service) at one concurrency, over repeated runs: each figure is the
 * best run's, with the spread of all runs beside it. Timings on a shared 2-core machine are noisy.
 */
export interface SideFigures {
  runs: number;
  ok: number;
  errors: number;
  errorSamples: string[];
  ttftMs: Percentiles;
  itlMs: Percentiles;
  chunkGapMs: Percentiles;
  latencyMs: Percentiles;
  tokensPerSecond: number;
  /** All runs as one: their tokens over their summed time. Drift falls on both sides alike when runs alternate. */
  pooledTokensPerSecond: number;
  requestsPerSecond: number;
  deltaEventsPerSecond: number;
  /** Tokens per request, to show both sides generated the same answers. */
  tokensPerRequest: number;
  spread: { ttftP50Ms: Spread; ttftP99Ms: Spread; tokensPerSecond: Spread; requestsPerSecond: Spread; deltaEventsPerSecond: Spread };
  /** Cores each process kept busy in the best run (service side). */
  cpu?: Record<string, number>;
  /**
   * CPU time each process spent per request and per delta event in that run: less sensitive to
   * what else runs on the machine than wall-clock rates, and what capacity per core follows from.
   */
  cpuPerRequestMs?: Record<string, number>;
  cpuPerDeltaUs?: Record<string, number>;
}

const pick = (values: number[]): number[] => values.map((value) => round(value));

function percentilesOf(results: LoadResult[], metric: 'ttftMs' | 'itlMs' | 'chunkGapMs' | 'latencyMs'): Percentiles {
  // Percentiles of the run with the lowest median, rather than a mix of runs.
  const best = results.reduce((a, b) => (b[metric].p50 < a[metric].p50 ? b : a));
  return { p50: round(best[metric].p50), p95: round(best[metric].p95), p99: round(best[metric].p99) };
}

export function sideFigures(results: LoadResult[], cpu?: Array<Record<string, number>>): SideFigures {
  const rates = (metric: 'tokensPerSecond' | 'requestsPerSecond' | 'deltaEventsPerSecond'): Spread => {
    const spread = spreadOf(
      results.map((result) => result[metric]),
      true,
    );
    return { best: round(spread.best, 1), worst: round(spread.worst, 1), runs: pick(spread.runs) };
  };
  const latencies = (values: number[]): Spread => {
    const spread = spreadOf(values, false);
    return { best: round(spread.best), worst: round(spread.worst), runs: pick(spread.runs) };
  };
  const bestThroughput = results.reduce((a, b) => (b.tokensPerSecond > a.tokensPerSecond ? b : a));
  const ok = results.reduce((sum, result) => sum + result.ok, 0);
  const tokens = results.reduce((sum, result) => sum + result.completionTokens, 0);
  const elapsedMs = results.reduce((sum, result) => sum + result.elapsedMs, 0);
  const spread = {
    ttftP50Ms: latencies(results.map((result) => result.ttftMs.p50)),
    ttftP99Ms: latencies(results.map((result) => result.ttftMs.p99)),
    tokensPerSecond: rates('tokensPerSecond'),
    requestsPerSecond: rates('requestsPerSecond'),
    deltaEventsPerSecond: rates('deltaEventsPerSecond'),
  };
  return {
    runs: results.length,
    ok,
    errors: results.reduce((sum, result) => sum + result.errors, 0),
    errorSamples: [...new Set(results.flatMap((result) => result.errorSamples))].slice(0, 5),
    ttftMs: percentilesOf(results, 'ttftMs'),
    itlMs: percentilesOf(results, 'itlMs'),
    chunkGapMs: percentilesOf(results, 'chunkGapMs'),
    latencyMs: percentilesOf(results, 'latencyMs'),
    tokensPerSecond: spread.tokensPerSecond.best,
    pooledTokensPerSecond: elapsedMs > 0 ? round((tokens * 1000) / elapsedMs, 1) : 0,
    requestsPerSecond: spread.requestsPerSecond.best,
    deltaEventsPerSecond: spread.deltaEventsPerSecond.best,
    tokensPerRequest: ok > 0 ? round(tokens / ok, 2) : 0,
    spread,
    ...(cpu ? cpuCosts(cpu[results.indexOf(bestThroughput)], bestThroughput) : {}),
  };
}

function cpuCosts(cores: Record<string, number>, run: LoadResult): Pick<SideFigures, 'cpu' | 'cpuPerRequestMs' | 'cpuPerDeltaUs'> {
  const per = (rate: number, unit: number): Record<string, number> =>
    Object.fromEntries(Object.entries(cores).map(([name, value]) => [name, rate > 0 ? round((value / rate) * unit, 3) : 0]));
  return { cpu: cores, cpuPerRequestMs: per(run.requestsPerSecond, 1000), cpuPerDeltaUs: per(run.deltaEventsPerSecond, 1_000_000) };
}

/** Engine alone and service side by side at one concurrency. */
export interface ComparisonLevel {
  concurrency: number;
  /** Synthetic engine levels: the time between tokens. */
  tokenIntervalMs?: number;
  engine: SideFigures;
  service: SideFigures;
  /**
   * service / engine (tokens/s, requests/s) and service − engine (TTFT, ms), from the best runs;
   * `pooledTokensPerSecond` from all runs pooled, `tokensPerSecondByRepeat` each repeat's pair of
   * adjacent runs, and `repeatStandardError` the standard error of those pairs' mean: how far to
   * trust the pooled ratio. On a machine whose speed drifts, one lucky run decides a best-run ratio;
   * many short alternating runs pooled do not depend on one.
   */
  ratio: {
    tokensPerSecond: number;
    pooledTokensPerSecond: number;
    tokensPerSecondByRepeat: number[];
    repeatStandardError: number;
    requestsPerSecond: number;
  };
  addedTtftMs: Percentiles;
}

export function compare(concurrency: number, engine: SideFigures, service: SideFigures): ComparisonLevel {
  const ratio = (a: number, b: number): number => (b > 0 ? round(a / b, 4) : 0);
  const byRepeat = service.spread.tokensPerSecond.runs.map((rate, repeat) => ratio(rate, engine.spread.tokensPerSecond.runs[repeat] ?? 0));
  return {
    concurrency,
    engine,
    service,
    ratio: {
      tokensPerSecond: ratio(service.tokensPerSecond, engine.tokensPerSecond),
      pooledTokensPerSecond: ratio(service.pooledTokensPerSecond, engine.pooledTokensPerSecond),
      tokensPerSecondByRepeat: byRepeat,
      repeatStandardError: round(standardError(byRepeat), 4),
      requestsPerSecond: ratio(service.requestsPerSecond, engine.requestsPerSecond),
    },
    addedTtftMs: {
      p50: round(service.ttftMs.p50 - engine.ttftMs.p50),
      p95: round(service.ttftMs.p95 - engine.ttftMs.p95),
      p99: round(service.ttftMs.p99 - engine.ttftMs.p99),
    },
  };
}

export interface OpenStreamsLevel {
  streams: number;
  opened: number;
  failed: number;
  errorSamples: string[];
  openSeconds: number;
  ttftMs: Percentiles;
  /** The API process after a full GC, before opening the streams and while they are all open. */
  apiBefore: { rssBytes: number; heapUsedBytes: number; externalBytes: number };
  apiWhileOpen: { rssBytes: number; heapUsedBytes: number; externalBytes: number };
  perStreamBytes: { rss: number; heapUsed: number; external: number };
  /** CLIENT LIST entries named api-* while the streams are open. */
  redisApiConnections: number;
}

export interface NonStreamLevel {
  concurrency: number;
  service: SideFigures;
}

export interface EmbeddingsThroughput {
  embeddingsPerSecond: number;
  inputTokensPerSecond: number;
  errors: number;
}

/** One concurrency of the embeddings phase: the service against node-llama-cpp alone on the same model. */
export interface EmbeddingsLevel {
  model: string;
  /** The worker's EMBEDDING_CONTEXTS and ENGINE_THREADS. */
  contexts: number;
  threadsPerContext: number;
  concurrency: number;
  inputsPerRequest: number;
  /** Its two runs (before and after the service's levels), averaged. */
  engine: EmbeddingsThroughput;
  /** Each run's embeddings/s and the thread count it was best at. */
  engineRuns: string[];
  service: EmbeddingsThroughput;
  requestLatencyMs: Summary;
  /** The service's embeddings/s over the engine's. */
  ratio: number;
}

export interface ProfileSummary {
  phase: string;
  totalMs: number;
  idlePercent: number;
  top: Array<{ function: string; location: string; selfMs: number; selfPercent: number }>;
  /** Self time grouped by package (node_modules/<name>) or app folder. */
  byPackage: Array<{ name: string; selfPercent: number }>;
}

export interface Bar {
  name: string;
  target: string;
  measured: string;
  met: boolean | null;
  note?: string;
}

export interface BenchResults {
  generatedAt: string;
  mode: 'full' | 'quick';
  machine: { cpus: number; cpuModel: string; node: string; loadAverageAtStart: number[]; openFilesLimit: number };
  settings: Record<string, unknown>;
  llama?: ComparisonLevel[];
  /**
   * llama.cpp's own server alone (its chat route, the worker's slots and threads) against the
   * service on ENGINE=llama-server (`service`) and on ENGINE=llama (`llamaEngine`), each paired
   * with its own runs of the server alone.
   */
  llamaServer?: { service: ComparisonLevel[]; llamaEngine: ComparisonLevel[] };
  synthetic?: ComparisonLevel[];
  relay?: ComparisonLevel[];
  openStreams?: { redisApiConnectionsIdle: number; levels: OpenStreamsLevel[]; skipped: string[] };
  nonStream?: NonStreamLevel[];
  embeddings?: EmbeddingsLevel[];
  profiles?: ProfileSummary[];
  bars: Bar[];
  durationSeconds: number;
}
