import { Inject, Injectable } from '@nestjs/common';
import { cancellationsChannel, decodeTokenEvent } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import { COMMANDS_REDIS } from '../../redis/api-redis.module';
import { CompletionQueues } from '../../pipeline/completion-queues';
import { latestAttemptOutput } from '../../pipeline/event-sequence-tracker';
import type { ConversationItem } from './response-items';
import { ResponseOutput } from './responses-formatter';
import { ResponseLoopQueue } from './response-loop-queue';
import { StoredResponses, storedResponseKeys } from './stored-responses';
import type { StoredResponseRecord } from './stored-responses';

/**
 * `POST /v1/responses/{id}/cancel` on any instance: the record ends `cancelled` first (so no later
 * ending replaces it), keeping the output its log holds so far as OpenAI does, then the job is
 * stopped as a chat completion whose client left is: taken off the queue while it waits, aborted
 * by its worker (the cancellations channel) while it runs.
 */
@Injectable()
export class ResponseCancellation {
  constructor(
    private readonly stored: StoredResponses,
    private readonly queues: CompletionQueues,
    private readonly loops: ResponseLoopQueue,
    @Inject(COMMANDS_REDIS) private readonly redis: RedisClient,
  ) {}

  /** The record as it stands afterwards: cancelled, or how it ended first; undefined once deleted. */
  async cancel(record: StoredResponseRecord): Promise<StoredResponseRecord | undefined> {
    const output = await this.outputSoFar(record).catch(() => []);
    const ended = await this.stored.endIfOpen(record, { status: 'cancelled', output }, output);
    if (ended?.state.status !== 'cancelled') return ended;
    const { id, model } = record.identity;
    await Promise.all([
      this.queues
        .forModel(model)
        .remove(id)
        .catch(() => 0),
      // A tool loop not taken yet never starts; a running one stops on the message below.
      record.loop ? this.loops.queue.remove(id).catch(() => 0) : 0,
      this.redis.spublish(cancellationsChannel(model), id).catch(() => 0),
      // What the creating instance watches for: a job taken off its queue sends it no event.
      this.redis.set(storedResponseKeys(id).cancelled, '1', 'PX', this.stored.keepMs).catch(() => null),
    ]);
    return ended;
  }

  /** The items of the latest attempt in the response's event log, as they stand (`in_progress`). */
  private async outputSoFar(record: StoredResponseRecord): Promise<ConversationItem[]> {
    const entries = await this.redis.xrange(storedResponseKeys(record.identity.id).log, '-', '+');
    const built = new ResponseOutput(record.identity.id, record.identity.settings);
    built.add(latestAttemptOutput(entries.map(([, fields]) => decodeTokenEvent(fields[1]))));
    return built.snapshot();
  }
}
