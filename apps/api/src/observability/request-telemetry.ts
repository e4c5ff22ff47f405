import { Injectable } from '@nestjs/common';
import type { CompletionJobData, TokenEvent } from '@app/contracts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CompletionEventBus } from '../pipeline/completion-event-bus';
import { ApiMetrics } from './api-metrics';
import { REQUEST_ID_HEADER } from './request-logging';

/** Status recorded for a request whose client closed the connection before the response ended (nginx's convention). */
const CLIENT_CLOSED = 499;

/** Routes that probes and scrapers poll: their lines are logged at debug level, not info. */
const QUIET_ROUTES = new Set(['/health/live', '/health/ready', '/metrics']);

/** What this instance learns about one completion from its events; times in ms since the request arrived. */
interface CompletionRecord {
  completionId: string;
  model: string;
  stream: boolean;
  queueMs?: number;
  ttftMs?: number;
  promptTokens?: number;
  completionTokens?: number;
  finishReason?: string;
  error?: string;
}

interface RequestRecord {
  /** performance.now() when the request arrived. */
  arrivedAt: number;
  completion?: CompletionRecord;
}

const roundMs = (ms: number): number => Math.round(ms * 10) / 10;

/** The model named in a request body, for the log line of a request that never became a completion. */
function bodyModel(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null || !('model' in body)) return undefined;
  const { model } = body;
  return typeof model === 'string' ? model.slice(0, 128) : undefined;
}

/**
 * Measures every HTTP request at its edges and writes its one log line:
 * - a Fastify onRequest hook starts the clock and returns the request id as `x-request-id`;
 * - the response's `close` records requests by route and status, latency, and the log line;
 * - a chat completion is linked to its request by `trackCompletion`, and its token events are
 *   observed as the CompletionEventBus dispatches them (time to first token, queue wait, usage).
 * Prompts, message contents and headers are never logged.
 */
@Injectable()
export class RequestTelemetry {
  private readonly requests = new WeakMap<FastifyRequest, RequestRecord>();
  /** Completions open on this instance, by completion id. */
  private readonly open = new Map<string, { request: RequestRecord; completion: CompletionRecord }>();

  constructor(
    private readonly metrics: ApiMetrics,
    events: CompletionEventBus,
  ) {
    events.observe((event) => this.onEvent(event));
  }

  /**
   * Call first thing after the app is created: Fastify copies a scope's hooks into the plugins
   * registered in it when they load, so plugins registered earlier (Swagger's assets, Bull Board)
   * would not see this hook.
   */
  install(fastify: FastifyInstance): void {
    fastify.addHook('onRequest', (request, reply, done) => {
      this.begin(request, reply);
      done();
    });
  }

  /** Links a request to the completion it runs; call once it is known to be for a served model. */
  trackCompletion(reply: FastifyReply, job: Pick<CompletionJobData, 'id' | 'model'>, stream: boolean): void {
    // A WebSocket's upgrade carries many responses, long after it arrived: timed from it, they would lie.
    if (reply.request.ws) return;
    const request = this.requests.get(reply.request);
    if (!request || request.completion) return;
    const completion: CompletionRecord = { completionId: job.id, model: job.model, stream };
    request.completion = completion;
    this.open.set(job.id, { request, completion });
    if (stream) this.metrics.activeStreams.inc({ model: job.model });
  }

  /** A completion that ended in an error, by its OpenAI code; a worker's own code, seen first, wins. */
  completionFailed(reply: FastifyReply, code: string | null): void {
    const completion = this.requests.get(reply.request)?.completion;
    if (completion) completion.error ??= code ?? 'server_error';
  }

  private begin(request: FastifyRequest, reply: FastifyReply): void {
    const record: RequestRecord = { arrivedAt: performance.now() };
    this.requests.set(request, record);
    // On the raw response, so that streamed answers (written to the socket directly) carry it too.
    reply.raw.setHeader(REQUEST_ID_HEADER, request.id);
    reply.raw.once('close', () => this.end(request, reply, record));
  }

  private onEvent(event: TokenEvent): void {
    const entry = this.open.get(event.completionId);
    if (!entry) return;
    const { request, completion } = entry;
    const elapsedMs = performance.now() - request.arrivedAt;
    switch (event.type) {
      case 'started':
        completion.queueMs ??= elapsedMs;
        break;
      case 'output':
        if (completion.ttftMs === undefined) {
          completion.ttftMs = elapsedMs;
          this.metrics.timeToFirstToken.observe({ model: completion.model, stream: String(completion.stream) }, elapsedMs / 1000);
        }
        break;
      case 'end':
        completion.promptTokens = event.usage.prompt_tokens;
        completion.completionTokens = event.usage.completion_tokens;
        completion.finishReason = event.finishReason;
        break;
      case 'error':
        completion.error = event.code;
        break;
      case 'heartbeat':
        break;
    }
  }

  private end(request: FastifyRequest, reply: FastifyReply, record: RequestRecord): void {
    // A completion the handler links after this (its client left during admission) is not tracked.
    this.requests.delete(request);
    const durationMs = performance.now() - record.arrivedAt;
    // An upgrade that was not refused ends when its WebSocket closes; it was answered 101 Switching Protocols.
    const status = reply.raw.writableFinished ? reply.raw.statusCode : request.ws ? 101 : CLIENT_CLOSED;
    const route = request.routeOptions.url ?? 'unmatched';
    const labels = { method: request.method, route, status: String(status) };
    this.metrics.httpRequests.inc(labels);
    this.metrics.httpRequestDuration.observe(labels, durationMs / 1000);

    const { completion } = record;
    if (completion) {
      this.open.delete(completion.completionId);
      if (completion.stream) this.metrics.activeStreams.dec({ model: completion.model });
      this.metrics.completionDuration.observe({ model: completion.model, stream: String(completion.stream), status: labels.status }, durationMs / 1000);
      if (completion.error !== undefined) this.metrics.completionErrors.inc({ model: completion.model, code: completion.error });
    }

    const line = {
      method: request.method,
      route,
      path: request.url.split('?')[0],
      status,
      model: completion?.model ?? bodyModel(request.body),
      stream: completion?.stream,
      completionId: completion?.completionId,
      finishReason: completion?.finishReason,
      error: completion?.error,
      promptTokens: completion?.promptTokens,
      completionTokens: completion?.completionTokens,
      queueMs: completion?.queueMs === undefined ? undefined : roundMs(completion.queueMs),
      ttftMs: completion?.ttftMs === undefined ? undefined : roundMs(completion.ttftMs),
      totalMs: roundMs(durationMs),
    };
    const level = status >= 500 ? 'warn' : QUIET_ROUTES.has(route) ? 'debug' : 'info';
    request.log[level](line, 'request completed');
  }
}
