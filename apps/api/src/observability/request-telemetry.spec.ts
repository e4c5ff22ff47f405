import type { ApiEnv } from '@app/config';
import { EventEmitter } from 'node:events';
import type { TokenEvent } from '@app/contracts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { CompletionEventBus } from '../pipeline/completion-event-bus';
import type { CompletionQueues } from '../pipeline/completion-queues';
import type { ModelRegistry } from '../models/model-registry';
import { ApiMetrics } from './api-metrics';
import { RequestTelemetry } from './request-telemetry';

type OnRequest = (request: FastifyRequest, reply: FastifyReply, done: () => void) => void;

/** A request as Fastify hands it to the hook, with the raw response whose `close` ends it. */
function exchange(): { request: FastifyRequest; reply: FastifyReply; raw: EventEmitter } {
  const raw = Object.assign(new EventEmitter(), { setHeader: () => undefined, writableFinished: true, statusCode: 200 });
  const log = { info: () => undefined, warn: () => undefined, debug: () => undefined };
  const request = {
    id: 'request-1',
    method: 'POST',
    url: '/v1/chat/completions',
    routeOptions: { url: '/v1/chat/completions' },
    body: {},
    log,
  } as unknown as FastifyRequest;
  return { request, reply: { raw, request } as unknown as FastifyReply, raw };
}

describe('RequestTelemetry', () => {
  let metrics: ApiMetrics;
  let telemetry: RequestTelemetry;
  let onRequest: OnRequest;
  let observer: (event: TokenEvent) => void;

  beforeEach(() => {
    metrics = new ApiMetrics({} as CompletionQueues, { list: () => [] } as unknown as ModelRegistry, {} as ApiEnv);
    const events = { observe: (next: (event: TokenEvent) => void) => (observer = next) } as unknown as CompletionEventBus;
    telemetry = new RequestTelemetry(metrics, events);
    telemetry.install({ addHook: (_name: string, hook: OnRequest) => (onRequest = hook) } as unknown as FastifyInstance);
  });

  const openStreams = async (): Promise<number> => (await metrics.activeStreams.get()).values.reduce((sum, { value }) => sum + value, 0);

  it('counts a stream as open from its link to the end of its request', async () => {
    const { request, reply, raw } = exchange();
    onRequest(request, reply, () => undefined);
    telemetry.trackCompletion(reply, { id: 'chatcmpl-1', model: 'tiny-chat' }, true);
    expect(await openStreams()).toBe(1);
    raw.emit('close');
    expect(await openStreams()).toBe(0);
  });

  it('forgets a completion linked after its request ended (its client left during admission)', async () => {
    const { request, reply, raw } = exchange();
    onRequest(request, reply, () => undefined);
    raw.emit('close');
    telemetry.trackCompletion(reply, { id: 'chatcmpl-2', model: 'tiny-chat' }, true);
    expect(await openStreams()).toBe(0);
    // Its events find nothing to record against: no request waits for them.
    observer({ completionId: 'chatcmpl-2', attempt: 1, seq: 0, type: 'started', workerId: 'w' });
    expect(await openStreams()).toBe(0);
  });
});
