import type { WorkerEnv } from '@app/config';
import type { Summary } from './stats';

/**
 * What a benchmark driver (the HTTP load generator, or the engine driven in-process) is asked to
 * do and what it answers. Drivers are child processes; these messages cross their IPC channel.
 */

/** A closed loop: `concurrency` clients, each sending its next request when the last one ends. */
export interface LoadPlan {
  concurrency: number;
  /** Measured requests in all; the run ends when the last has finished (or failed). */
  requests: number;
  /** Requests sent first and not measured: they open connections and warm the JIT. */
  warmupRequests: number;
  /** max_tokens of the warm-up requests: 1 opens the connections without waiting for long answers. */
  warmupMaxTokens: number;
  /** No request is sent after this many milliseconds of the measured run; those under way finish. */
  durationMs: number;
  /**
   * Requests still under way this long after the start are abandoned (and counted as errors), so
   * that a level the service cannot keep up with ends anyway.
   */
  hardStopMs: number;
  /** Streamed (SSE) or one JSON body per request. */
  stream: boolean;
  maxTokens: number;
  /** A request that takes longer is abandoned and counted as an error. */
  requestTimeoutMs: number;
}

/** Hold `streams` streams open at once, report when each has its first token, close them on `release`. */
export interface HoldPlan {
  streams: number;
  /** Streams opened at a time, so that a burst of connections does not overflow the listen backlog. */
  openBatch: number;
  maxTokens: number;
  openTimeoutMs: number;
}

export interface LoadResult {
  requests: number;
  ok: number;
  errors: number;
  /** A few error descriptions (status and body), to tell why. */
  errorSamples: string[];
  elapsedMs: number;
  completionTokens: number;
  /** Content chunks received (one per delta event the worker published). */
  deltaEvents: number;
  /** Time to first token: from sending the request to its first content. */
  ttftMs: Summary;
  /** Gaps between consecutive content chunks of a stream. */
  chunkGapMs: Summary;
  /** Per request, (last token − first token) / (tokens − 1): the inter-token latency. */
  itlMs: Summary;
  /** Whole request, send to last byte. */
  latencyMs: Summary;
  tokensPerSecond: number;
  requestsPerSecond: number;
  deltaEventsPerSecond: number;
}

export interface HoldResult {
  opened: number;
  failed: number;
  errorSamples: string[];
  ttftMs: Summary;
  openMs: number;
}

export type DriverRequest =
  { type: 'run'; id: number; plan: LoadPlan } | { type: 'hold'; id: number; plan: HoldPlan } | { type: 'release'; id: number } | { type: 'close' };

export type DriverReply =
  | { type: 'ready' }
  | { type: 'result'; id: number; result: LoadResult }
  | { type: 'holding'; id: number; result: HoldResult }
  | { type: 'released'; id: number }
  | { type: 'failed'; id: number; message: string };

/** The worker's GPU setting, where `false` is the CPU. */
export type GpuSetting = WorkerEnv['GPU'];

/** How the engine driver builds its engine: the same options the worker's factory passes. */
export type EngineSpec =
  /** `llama`: node-llama-cpp (ENGINE=llama); `llama-server`: llama.cpp's own server (ENGINE=llama-server), alone driven through its own chat route. */
  | {
      kind: 'llama' | 'llama-server';
      modelPath: string;
      parallelSequences: number;
      threads: number;
      contextSize: number;
      gpu?: GpuSetting;
      engineCpus?: string;
    }
  | { kind: 'synthetic'; tokens: number; tokenIntervalMs: number; slots: number; contextSize: number };

/** How the HTTP driver reaches the service. */
export interface HttpTarget {
  baseUrl: string;
  apiKey: string;
  model: string;
}
