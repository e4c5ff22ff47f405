import { Inject, Injectable } from '@nestjs/common';
import { cancellationsChannel } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import { COMMANDS_REDIS } from '../completions/api-redis.providers';
import { CompletionQueues } from '../completions/completion-queues';
import { StoredResponses } from './stored-responses';
import type { StoredResponseRecord } from './stored-responses';

/**
 * `POST /v1/responses/{id}/cancel` on any instance: the record ends `cancelled` first (so no later
 * ending replaces it), then the job is stopped as a chat completion whose client left is: taken
 * off the queue while it waits, aborted by its worker (the cancellations channel) while it runs.
 */
@Injectable()
export class ResponseCancellation {
  constructor(
    private readonly stored: StoredResponses,
    private readonly queues: CompletionQueues,
    @Inject(COMMANDS_REDIS) private readonly redis: RedisClient,
  ) {}

  /** The record as it stands afterwards: cancelled, or how it ended first; undefined once deleted. */
  async cancel(record: StoredResponseRecord): Promise<StoredResponseRecord | undefined> {
    const ended = await this.stored.endIfOpen(record, { status: 'cancelled', output: [] }, []);
    if (ended?.state.status !== 'cancelled') return ended;
    const { id, model } = record.identity;
    await Promise.all([this.queues.forModel(model).remove(id).catch(() => 0), this.redis.spublish(cancellationsChannel(model), id).catch(() => 0)]);
    return ended;
  }
}
