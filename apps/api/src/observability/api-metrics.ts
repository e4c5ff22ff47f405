import { Injectable } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { CompletionQueues } from '../pipeline/completion-queues';
import type { CompletionQueue } from '../pipeline/completion-queues';
import { isSupervisedApiProcess } from '../cluster/api-process-supervisor';
import { metricsFromSupervisor, shareMetricsWithSupervisor } from '../cluster/cluster-metrics';
import { ModelRegistry } from '../models/model-registry';

/** Seconds, from a few milliseconds (a health probe) to five minutes (a long answer from a large model). */
const REQUEST_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
/** Seconds a job waits for a worker, up to the default MAX_QUEUE_WAIT_MS and beyond. */
const QUEUE_WAIT_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60];
/** Seconds until the first token: queue wait plus prefill. */
const FIRST_TOKEN_SECONDS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * The API's Prometheus metrics, in a registry of their own (served at /metrics). Names follow
 * Prometheus conventions: `llm_api_` prefix, base units (`_seconds`), `_total` for counters.
 * The queue gauges are read from Redis on each scrape, so every API instance reports the same
 * queue: aggregate them with max(), not sum(). Under the supervisor (API_PROCESSES > 1) a scrape
 * answers for all of the host's processes (cluster/cluster-metrics.ts).
 */
@Injectable()
export class ApiMetrics {
  readonly registry = new Registry();

  readonly httpRequests = new Counter({
    name: 'llm_api_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status (499: the client closed the connection first).',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });

  readonly httpRequestDuration = new Histogram({
    name: 'llm_api_http_request_duration_seconds',
    help: 'Time from receiving a request to the end of its response, by method, route pattern and status.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: REQUEST_SECONDS,
    registers: [this.registry],
  });

  readonly completionDuration = new Histogram({
    name: 'llm_api_completion_duration_seconds',
    help: 'End-to-end latency of chat completions, from request received to last byte sent, by model, stream and status.',
    labelNames: ['model', 'stream', 'status'] as const,
    buckets: REQUEST_SECONDS,
    registers: [this.registry],
  });

  readonly timeToFirstToken = new Histogram({
    name: 'llm_api_time_to_first_token_seconds',
    help: 'Time from request received to the first generated text reaching the API (queue wait plus prefill), by model and stream.',
    labelNames: ['model', 'stream'] as const,
    buckets: FIRST_TOKEN_SECONDS,
    registers: [this.registry],
  });

  readonly completionErrors = new Counter({
    name: 'llm_api_completion_errors_total',
    help: "Chat completions admitted to a queue that ended in an error, by model and error code (the worker's, e.g. generation_timeout, or the API's, e.g. no_capacity, worker_lost).",
    labelNames: ['model', 'code'] as const,
    registers: [this.registry],
  });

  readonly activeStreams = new Gauge({
    name: 'llm_api_active_streams',
    help: 'Streaming chat completions (stream: true) open on this API instance, by model.',
    labelNames: ['model'] as const,
    registers: [this.registry],
  });

  readonly affinityPlacements = new Counter({
    name: 'llm_api_affinity_placements_total',
    help: 'Where prefix-cache affinity placed interactive jobs, by model and outcome: hit (the own queue of the worker that served the key last), miss (no live worker holds the key), busy (its worker had as many jobs waiting as sequences, or the shared queue was full), off (AFFINITY off, a stored or flex job), fallback (a hit its worker did not start within AFFINITY_WAIT_MS, moved to the shared queue; counted besides its hit).',
    labelNames: ['model', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly fairShareExpress = new Counter({
    name: 'llm_api_fair_share_express_total',
    help: "Interactive jobs of keys under their fair share sent to the model's express lane (FAIR_SHARE_EXPRESS), by model and outcome: placed, fallback (not started there within FAIR_SHARE_EXPRESS_WAIT_MS, moved to the shared queue; counted besides its placed).",
    labelNames: ['model', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly keyServedTokens = new Counter({
    name: 'llm_api_key_served_tokens_total',
    help: "Tokens served per API key (its id: the first 24 hex digits of the key's SHA-256; at most 100 keys per process, the rest as `other`), by model and kind (prompt, completion): what fair share counts.",
    labelNames: ['model', 'key', 'kind'] as const,
    registers: [this.registry],
  });

  readonly keyQueueWait = new Histogram({
    name: 'llm_api_key_queue_wait_seconds',
    help: 'Time from request received to its job started on a worker, per API key (id as in llm_api_key_served_tokens_total), by model and service tier.',
    labelNames: ['model', 'tier', 'key'] as const,
    buckets: QUEUE_WAIT_SECONDS,
    registers: [this.registry],
  });

  constructor(queues: CompletionQueues, registry: ModelRegistry, env: ApiEnv) {
    collectDefaultMetrics({ register: this.registry });
    if (isSupervisedApiProcess()) shareMetricsWithSupervisor(this.registry);
    // With AFFINITY on, a model's jobs also wait and run in its live workers' own queues, and with
    // the express lane on in that lane: counted with the shared queue's.
    const express = CompletionQueues.expressLaneOn(env);
    const served: ServedQueues = {
      models: () => registry.list().map(({ id }) => id),
      queues: (model) => [
        queues.forModel(model),
        ...(env.AFFINITY ? registry.liveWorkers(model).map(({ workerId }) => queues.forWorker(model, workerId)) : []),
        ...(express ? [queues.forExpress(model)] : []),
      ],
    };
    const where = "the model queue, its live workers' own queues and its express lane";
    queueGauge(this.registry, served, 'llm_api_queue_waiting_jobs', `Jobs waiting for a worker in ${where} (read from Redis on scrape).`, (queue) =>
      queue.getWaitingCount(),
    );
    queueGauge(
      this.registry,
      served,
      'llm_api_queue_prioritized_jobs',
      "Jobs waiting in the model queue's prioritized set: flex requests and batch lines, and with FAIR_SHARE every interactive request (read from Redis on scrape).",
      (queue) => queue.getPrioritizedCount(),
    );
    queueGauge(this.registry, served, 'llm_api_queue_active_jobs', `Jobs a worker is running from ${where} (read from Redis on scrape).`, (queue) =>
      queue.getActiveCount(),
    );
  }

  /** The text a scrape answers: this process's metrics, or the whole host's under the supervisor. */
  scrape(): Promise<string> {
    return isSupervisedApiProcess() ? metricsFromSupervisor() : this.registry.metrics();
  }
}

/** Every served model (configured, or announced by a live worker) and its queues. */
interface ServedQueues {
  models(): string[];
  queues(model: string): CompletionQueue[];
}

/** A per-model gauge whose values (summed over its queues) are read on each scrape; a model whose queues cannot be read has no sample. */
function queueGauge(registry: Registry, queues: ServedQueues, name: string, help: string, read: (queue: CompletionQueue) => Promise<number>): void {
  const gauge: Gauge<'model'> = new Gauge({
    name,
    help,
    labelNames: ['model'] as const,
    registers: [registry],
    // Every process of a host reads the same queue: its processes' values are not added up.
    aggregator: 'max',
    collect: async () => {
      gauge.reset();
      await Promise.all(
        queues.models().map(async (model) => {
          const value = await Promise.all(queues.queues(model).map(read)).then(
            (counts) => counts.reduce((sum, count) => sum + count, 0),
            () => undefined,
          );
          if (value !== undefined) gauge.set({ model }, value);
        }),
      );
    },
  });
}
