import { Injectable } from '@nestjs/common';
import { WorkerEnv } from '@app/config';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Seconds a job waits in the queue: from none at all to the API's longest wait. */
const QUEUE_WAIT_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
/** Seconds from the engine taking a job to its first token (prompt evaluation). */
const FIRST_TOKEN_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Seconds between two tokens: a tiny model on a CPU makes one per millisecond, a large one on a GPU one per 10-50 ms. */
const INTER_TOKEN_SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
const GENERATION_SECONDS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/**
 * The worker's Prometheus metrics, in a registry of their own, served on its health port at
 * /metrics. Every series carries the `model` this worker serves.
 */
@Injectable()
export class WorkerMetrics {
  readonly registry = new Registry();
  readonly model: string;

  readonly queueWait = new Histogram({
    name: 'llm_worker_queue_wait_seconds',
    help: 'Time a job waited in the queue before this worker took it (first attempts: processedOn - timestamp).',
    labelNames: ['model'] as const,
    buckets: QUEUE_WAIT_SECONDS,
    registers: [this.registry],
  });

  readonly timeToFirstToken = new Histogram({
    name: 'llm_worker_time_to_first_token_seconds',
    help: 'Time from the engine starting a completion to its first text (prompt evaluation).',
    labelNames: ['model'] as const,
    buckets: FIRST_TOKEN_SECONDS,
    registers: [this.registry],
  });

  readonly interTokenLatency = new Histogram({
    name: 'llm_worker_inter_token_latency_seconds',
    help: 'Time between two consecutive pieces of generated text of one completion.',
    labelNames: ['model'] as const,
    buckets: INTER_TOKEN_SECONDS,
    registers: [this.registry],
  });

  readonly generationDuration = new Histogram({
    name: 'llm_worker_generation_duration_seconds',
    help: 'Time the engine spent on one completion, by outcome (stop, length, embedded, aborted, error).',
    labelNames: ['model', 'outcome'] as const,
    buckets: GENERATION_SECONDS,
    registers: [this.registry],
  });

  readonly generations = new Counter({
    name: 'llm_worker_generations_total',
    help: 'Completions the engine finished, by outcome: stop, length (max_tokens or context), embedded (an embeddings job), aborted (cancelled or timed out), error.',
    labelNames: ['model', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly generatedTokens = new Counter({
    name: 'llm_worker_generated_tokens_total',
    help: 'Completion tokens generated (usage.completion_tokens of finished completions).',
    labelNames: ['model'] as const,
    registers: [this.registry],
  });

  readonly promptTokens = new Counter({
    name: 'llm_worker_prompt_tokens_total',
    help: 'Prompt tokens of finished completions (usage.prompt_tokens), cached ones included.',
    labelNames: ['model'] as const,
    registers: [this.registry],
  });

  readonly cachedPromptTokens = new Counter({
    name: 'llm_worker_cached_prompt_tokens_total',
    help: 'Prompt tokens not evaluated again, held from an earlier prompt (usage.prompt_tokens_details.cached_tokens).',
    labelNames: ['model'] as const,
    registers: [this.registry],
  });

  readonly busySlots = new Gauge({
    name: 'llm_worker_busy_slots',
    help: "Engine sequences generating right now (at most the worker's parallel sequences).",
    labelNames: ['model'] as const,
    registers: [this.registry],
  });

  readonly freeSlots = new Gauge({
    name: 'llm_worker_free_slots',
    help: 'Engine sequences free to take a job.',
    labelNames: ['model'] as const,
    registers: [this.registry],
  });

  readonly jobsMovedFromGoneWorkers = new Counter({
    name: 'llm_worker_jobs_moved_from_gone_workers_total',
    help: "Jobs this worker moved from a dead or draining worker's own queue (prefix-cache affinity) to the model's shared queue, by whether that worker had started them.",
    labelNames: ['model', 'started'] as const,
    registers: [this.registry],
  });

  constructor(env: WorkerEnv) {
    this.model = env.MODEL_NAME;
    collectDefaultMetrics({ register: this.registry });
  }
}
