import { Inject, Injectable } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { WORKER_SILENCE_LIMIT_MS, decodeTokenEvent } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import { setTimeout as sleep } from 'node:timers/promises';
import { COMMANDS_REDIS } from '../../redis/api-redis.module';
import { CompletionQueues, isInProgress } from '../../pipeline/completion-queues';
import type { CompletionSink } from '../../pipeline/completion-sink';
import { CompletionWatch } from '../../pipeline/completion-watch';
import type { CompletionEnding } from '../../pipeline/completion-watch';
import { streamBrokenError } from '../../pipeline/event-sequence-tracker';
import { OpenAiError } from '../../errors/openai-error';
import { holdLease } from './completion-lease';

/** How often a resumed stream reads new events from the log while it follows a live completion. */
const POLL_MS = 20;
/** Log entries read per round trip. */
const READ_COUNT = 500;

type LogEntries = Array<[id: string, fields: string[]]>;

/** A completion whose event log can be replayed: its job (id, model), its log, and its lease if it has one. */
export interface ReplayTarget {
  id: string;
  model: string;
  log: string;
  lease?: string;
  /** The error for a completion whose log has expired. */
  gone: OpenAiError;
}

/** A resumable stream of either front door: it numbers its frames and skips those its client has. */
export interface ReplayStream extends CompletionSink {
  /** Sends the headers at once (a resumed stream may have nothing new yet). */
  open(): void;
  finish(ending: CompletionEnding): Promise<void>;
  fail(error: unknown): void;
}

/**
 * Resumes any door's stream from its completion's event log (a stored chat completion's,
 * `GET /v1/chat/completions/{id}?stream=true`; a background response's, through ResponseReplay):
 * the door's stream formatter numbers the frames as the original request did and skips those
 * its client has. Works on any API instance.
 */
@Injectable()
export class EventLogReplay {
  constructor(
    private readonly env: ApiEnv,
    @Inject(COMMANDS_REDIS) private readonly redis: RedisClient,
    private readonly queues: CompletionQueues,
  ) {}

  /**
   * Replays a completion's event log into a stream (which skips what its client has), then
   * follows the log live until the completion ends, renewing its lease (when it has one) while the
   * client is here. `target.gone` is thrown when neither the log nor a running job is left.
   */
  async replay(target: ReplayTarget, response: ReplayStream, signal: AbortSignal): Promise<void> {
    // No log yet is fine while the job waits for a worker; no log once it ended means it expired.
    if ((await this.redis.exists(target.log)) === 0 && !isInProgress(await this.queues.forModel(target.model).getJobState(target.id))) throw target.gone;
    const release = target.lease === undefined ? () => undefined : await holdLease(this.redis, target.lease, this.env.RESUME_GRACE_MS);
    const watch = new CompletionWatch({
      sink: response,
      startWaitMs: WORKER_SILENCE_LIMIT_MS,
      // Nothing to withdraw: "withdrawn" means the job is gone without ending in the log.
      withdraw: async () => !isInProgress(await this.queues.forModel(target.model).getJobState(target.id)),
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
      void this.follow(target.log, watch, () => settled);
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
