import { Injectable, Logger } from '@nestjs/common';
import type { OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { ApiEnv } from '@app/config';
import { completionQueueName } from '@app/contracts';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter as BullBoardFastifyAdapter } from '@bull-board/fastify';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { BatchQueue } from '../batches/batch-queue';
import { ResponseLoopQueue } from '../openai/responses/response-loop-queue';
import { CompletionQueues } from '../pipeline/completion-queues';
import type { CompletionQueue } from '../pipeline/completion-queues';
import { ModelRegistry } from '../models/model-registry';
import { AdminCredentials } from './admin-credentials';

export const BULL_BOARD_PATH = '/admin/queues';

/** Browsers send Basic credentials with cross-site requests too: state changes must come from the board's own pages. */
function isCrossSite(request: FastifyRequest): boolean {
  if (request.method === 'GET' || request.method === 'HEAD') return false;
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return true;
  const origin = request.headers.origin;
  if (origin === undefined) return false;
  try {
    return new URL(origin).host !== request.headers.host;
  } catch {
    return true;
  }
}

const QUEUE_NAME_PREFIX = completionQueueName('');

function modelOf(queue: CompletionQueue): string {
  return queue.name.startsWith(QUEUE_NAME_PREFIX) ? queue.name.slice(QUEUE_NAME_PREFIX.length) : queue.name;
}

/** Bull Board's view of one model's queue, titled with the model's name. */
function boardQueue(queue: CompletionQueue): BullMQAdapter {
  const model = modelOf(queue);
  return new BullMQAdapter(queue, { allowRetries: false, displayName: model, description: `Chat completions for ${model}` });
}

/** Bull Board's view of a model's express lane (FAIR_SHARE_EXPRESS). */
function expressBoardQueue(model: string, queue: CompletionQueue): BullMQAdapter {
  const description = `Chat completions for ${model} of API keys under their fair share, for the workers' express sequences; a job not started in time moves to the shared queue`;
  return new BullMQAdapter(queue, { allowRetries: false, displayName: `${model} express`, description });
}

/** Bull Board's view of one worker's own queue (prefix-cache affinity). */
function workerBoardQueue(model: string, workerId: string, queue: CompletionQueue): BullMQAdapter {
  const description = `Chat completions for ${model} placed on worker ${workerId}, which holds their conversations (prefix-cache affinity); a job it does not start in time moves to the shared queue`;
  return new BullMQAdapter(queue, { allowRetries: false, displayName: `${model} @ ${workerId}`, description });
}

/** How often the board catches up with the workers coming and going. */
const WORKER_QUEUES_REFRESH_MS = 2000;

function refuse(reply: FastifyReply, status: 401 | 403, message: string, code: string): FastifyReply {
  if (status === 401) void reply.header('www-authenticate', 'Basic realm="Bull Board", charset="UTF-8"');
  return reply.code(status).send({ error: { message, type: 'invalid_request_error', param: null, code } });
}

/**
 * Bull Board at /admin/queues: every model's queue (the configured ones, and live ones as they
 * open), with FAIR_SHARE_EXPRESS its express lane, and with AFFINITY on each live worker's own
 * queue (listed while the worker is), behind the operators' own HTTP Basic credential (ADMIN_USER / ADMIN_PASSWORD, never an
 * API key). Without ADMIN_PASSWORD it is not served at all. Retrying a job is switched off: a
 * finished job's client has had its answer (or its error), so running it again would spend GPU
 * time for nobody.
 */
@Injectable()
export class BullBoardAdmin implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('BullBoard');
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly env: ApiEnv,
    private readonly queues: CompletionQueues,
    private readonly batches: BatchQueue,
    private readonly loops: ResponseLoopQueue,
    private readonly adapterHost: HttpAdapterHost,
    private readonly registry: ModelRegistry,
  ) {}

  onModuleInit(): void {
    if (this.env.ADMIN_PASSWORD === '') {
      this.logger.log(`Bull Board is off: set ADMIN_PASSWORD to serve it at ${BULL_BOARD_PATH}`);
      return;
    }
    const board = new BullBoardFastifyAdapter();
    board.setBasePath(BULL_BOARD_PATH);
    // With the express lane on, each model's lane is listed beside its queue.
    const express = CompletionQueues.expressLaneOn(this.env);
    const viewsOf = (queue: CompletionQueue): BullMQAdapter[] =>
      express ? [boardQueue(queue), expressBoardQueue(modelOf(queue), this.queues.forExpress(modelOf(queue)))] : [boardQueue(queue)];
    const { addQueue, removeQueue } = createBullBoard({
      queues: [
        ...this.queues.models.flatMap((model) => viewsOf(this.queues.forModel(model))),
        // One job per batch (its lines are jobs in their model's queue, below interactive ones).
        new BullMQAdapter(this.batches.queue, { allowRetries: false, displayName: 'batches', description: 'Batch coordination, one job per batch' }),
        // One job per background response with remote MCP tools (its turns are jobs in their model's queue).
        new BullMQAdapter(this.loops.queue, {
          allowRetries: false,
          displayName: 'response loops',
          description: 'Remote MCP tool loops of background responses, one job per response, carried by the API instances',
        }),
      ],
      serverAdapter: board,
      options: { uiConfig: { boardTitle: 'Completions' } },
    });
    // Queues of live models (announced by their workers) open later, on their first request.
    this.queues.onQueueAdded((queue) => viewsOf(queue).forEach((view) => addQueue(view)));
    if (this.env.AFFINITY) this.showWorkerQueues(addQueue, removeQueue);

    const credentials = new AdminCredentials(this.env.ADMIN_USER, this.env.ADMIN_PASSWORD);
    const fastify = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();
    // An encapsulated scope: the credential check applies to Bull Board's routes and to nothing else.
    void fastify.register(async (scope) => {
      scope.addHook('onRequest', async (request, reply) => {
        void reply.header('x-frame-options', 'DENY').header('referrer-policy', 'same-origin');
        if (!credentials.accepts(request.headers.authorization)) {
          return refuse(reply, 401, 'Bull Board needs the admin credentials (HTTP Basic auth).', 'admin_auth_required');
        }
        if (isCrossSite(request)) return refuse(reply, 403, 'Cross-site requests to Bull Board are refused.', 'cross_site_request');
      });
      await scope.register(board.registerPlugin(), { prefix: BULL_BOARD_PATH });
    });
    this.logger.log(`Bull Board at ${BULL_BOARD_PATH} for ${this.queues.models.length} model queue(s), user ${this.env.ADMIN_USER}`);
  }

  /** Lists each live worker's own queue, and drops a worker's once it has gone (the other workers empty it). */
  private showWorkerQueues(addQueue: (queue: BullMQAdapter) => void, removeQueue: (name: string) => void): void {
    const shown = new Set<string>();
    const refresh = (): void => {
      const live = new Set<string>();
      for (const { id: model, workers } of this.registry.list()) {
        for (const { workerId } of workers) {
          const queue = this.queues.forWorker(model, workerId);
          live.add(queue.name);
          if (!shown.has(queue.name)) addQueue(workerBoardQueue(model, workerId, queue));
          shown.add(queue.name);
        }
      }
      for (const name of shown) {
        if (live.has(name)) continue;
        removeQueue(name);
        shown.delete(name);
      }
    };
    refresh();
    this.timer = setInterval(refresh, WORKER_QUEUES_REFRESH_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }
}
