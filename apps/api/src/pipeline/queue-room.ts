import { Injectable } from '@nestjs/common';
import type { CanActivate, ExecutionContext } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import type { FastifyRequest } from 'fastify';
import { ModelRegistry } from '../models/model-registry';
import { CompletionQueues } from './completion-queues';
import { queueFull, WaitingLimit } from './waiting-limit';

/**
 * Whether the model a request names has room in its waiting line, asked before any work is done
 * for the request (validation, mapping, storing, placement), so that a burst into a full line is
 * refused at the cost of one count each (a Lua script). While the line has room nothing is asked of
 * Redis here, and the add's own check decides as always (WaitingLimit).
 */
@Injectable()
export class QueueRoom {
  constructor(
    private readonly waitingLimit: WaitingLimit,
    private readonly queues: CompletionQueues,
    private readonly models: ModelRegistry,
    private readonly env: ApiEnv,
  ) {}

  /** False for a model not served (its request's own path answers it), and when Redis cannot say. */
  async isFull(model: string): Promise<boolean> {
    if (!this.models.serves(model)) return false;
    return this.waitingLimit.stillFull(this.queues.forModel(model), model, this.env.MAX_WAITING_JOBS).catch(() => false);
  }
}

/**
 * On a route whose request queues a job for the model its body names: 503 queue_full before the
 * body is validated while that model's line is full. After ApiKeyGuard, so only callers learn it.
 */
@Injectable()
export class QueueRoomGuard implements CanActivate {
  constructor(private readonly room: QueueRoom) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const { body } = context.switchToHttp().getRequest<FastifyRequest>();
    const model = typeof body === 'object' && body !== null ? (body as { model?: unknown }).model : undefined;
    // A body without a model's name is its validation's to refuse.
    if (typeof model === 'string' && (await this.room.isFull(model))) throw queueFull(model);
    return true;
  }
}
