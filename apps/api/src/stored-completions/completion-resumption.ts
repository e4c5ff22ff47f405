import { Inject, Injectable } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { WORKER_SILENCE_LIMIT_MS, decodeTokenEvent, storedCompletionKeys } from '@app/contracts';
import type { StoredCompletionRecord } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import type { FastifyReply } from 'fastify';
import { setTimeout as sleep } from 'node:timers/promises';
import { StreamedChatCompletion } from '../chat/chat-completion-responses';
import { COMMANDS_REDIS } from '../redis/api-redis.module';
import { CompletionQueues, isInProgress } from '../completions/completion-queues';
import { CompletionWatch } from '../completions/completion-watch';
import { streamBrokenError } from '../completions/event-sequence-tracker';
import { OpenAiError } from '../errors/openai-error';
import { holdLease } from './completion-lease';
import { formatterOf } from './stored-completion-objects';

/** How often a resumed stream reads new events from the log while it follows a live completion. */
const POLL_MS = 20;
/** Log entries read per round trip. */
const READ_COUNT = 500;

type LogEntries = Array<[id: string, fields: string[]]>;

/**
 * Serves `GET /v1/chat/completions/{id}?stream=true`: replays a resumable completion's event log
 * through the same stream formatter as the original request, so its frames get the same ids,
 * sends those after the client's last one, then follows the log live until the end. Works on any
 * API instance, and renews the completion's lease while the client is here.
 */
@Injectable()
export class CompletionResumption {
  constructor(
    private readonly env: ApiEnv,
    @Inject(COMMANDS_REDIS) private readonly redis: RedisClient,
    private readonly queues: CompletionQueues,
  ) {}

  async resume(record: StoredCompletionRecord, afterFrame: number, reply: FastifyReply, signal: AbortSignal): Promise<void> {
    const keys = storedCompletionKeys(record.id);
    // No log yet is fine while the job waits for a worker; no log once it ended means it expired.
    if ((await this.redis.exists(keys.log)) === 0 && !isInProgress(await this.queues.forModel(record.model).getJobState(record.id))) {
      throw OpenAiError.notFound(`The stream of completion '${record.id}' can no longer be resumed; retrieve the stored completion instead.`, 'completion_id');
    }
    const response = new StreamedChatCompletion(reply, formatterOf(record, record.includeUsage), { after: afterFrame });
    const release = await holdLease(this.redis, keys.lease, this.env.RESUME_GRACE_MS);
    const watch = new CompletionWatch({
      sink: response,
      startWaitMs: WORKER_SILENCE_LIMIT_MS,
      // Nothing to withdraw: "withdrawn" means the job is gone without ending in the log.
      withdraw: async () => !isInProgress(await this.queues.forModel(record.model).getJobState(record.id)),
    });
    const onClientGone = (): void => watch.fail(OpenAiError.clientClosed());
    signal.addEventListener('abort', onClientGone, { once: true });
    if (signal.aborted) onClientGone(); // it left while the lease was being taken
    response.open();
    watch.awaitStart();
    let settled = false;
    watch.ending.then(
      () => (settled = true),
      () => (settled = true),
    );
    try {
      void this.follow(keys.log, watch, () => settled);
      await response.finish(await watch.ending);
    } catch (error) {
      response.fail(error);
    } finally {
      signal.removeEventListener('abort', onClientGone);
      release();
    }
  }

  /** Reads the log from its start, then polls it for new events, until the completion ends. */
  private async follow(log: string, watch: CompletionWatch, settled: () => boolean): Promise<void> {
    let lastId = '0';
    while (!settled()) {
      let entries: LogEntries;
      try {
        const read = await this.redis.xread('COUNT', READ_COUNT, 'STREAMS', log, lastId);
        entries = read?.[0]?.[1] ?? [];
      } catch {
        // The watch's silence limit ends the stream if Redis stays away.
        entries = [];
      }
      for (const [id, fields] of entries) {
        lastId = id;
        try {
          watch.onEvent(decodeTokenEvent(fields[1]));
        } catch {
          watch.fail(streamBrokenError());
        }
      }
      if (entries.length < READ_COUNT) await sleep(POLL_MS);
    }
  }
}
