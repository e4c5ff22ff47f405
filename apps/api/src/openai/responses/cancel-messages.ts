import { Inject, Injectable, Logger } from '@nestjs/common';
import { cancellationsChannel } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import { COMMANDS_REDIS, SUBSCRIBER_REDIS } from '../../redis/api-redis.module';
import { storedResponseKeys } from './stored-responses';

/** Stops following a completion's cancel messages. */
export type StopWatching = () => void;

/**
 * How often an instance following a background response checks its cancelled mark: only a safety
 * net for a cancel message lost (its subscriber reconnecting), which the message brings at once.
 */
const CANCEL_CHECK_MS = 15_000;

/**
 * A background response's cancel as it happens, on whichever instance follows it: the cancel
 * route publishes the completion's id on its model's cancellations channel (which also stops
 * its worker), and this instance, subscribed to that channel while it follows a background job
 * of the model, stops following at once. A model's channel stays subscribed once used: models
 * are few, and its messages (one per cancelled or abandoned completion) are cheap to ignore.
 */
@Injectable()
export class CancelMessages {
  private readonly logger = new Logger(CancelMessages.name);
  /** Channel → completion id → what to do when it is cancelled. */
  private readonly watched = new Map<string, Map<string, () => void>>();
  /** Channel → its SSUBSCRIBE, confirmed or failed. */
  private readonly subscribed = new Map<string, Promise<void>>();

  constructor(
    @Inject(SUBSCRIBER_REDIS) private readonly subscriber: RedisClient,
    @Inject(COMMANDS_REDIS) private readonly commands: RedisClient,
  ) {
    subscriber.on('smessage', (channel: string, completionId: string) => this.watched.get(channel)?.get(completionId)?.());
  }

  /**
   * Calls `onCancel` when a cancel of `completionId` is published. `subscribed` settles once
   * messages reach this instance: a cancel published before then is not seen here (the caller
   * checks the response's cancelled mark once it has settled).
   */
  watch(model: string, completionId: string, onCancel: () => void): { subscribed: Promise<void>; stop: StopWatching } {
    const channel = cancellationsChannel(model);
    let forChannel = this.watched.get(channel);
    if (!forChannel) this.watched.set(channel, (forChannel = new Map<string, () => void>()));
    forChannel.set(completionId, onCancel);
    return { subscribed: this.subscribe(channel), stop: () => forChannel.delete(completionId) };
  }

  /**
   * A signal that aborts when background response `id` is cancelled: by its cancel message, or
   * by its cancelled mark (a cancel published before the subscription took hold left it), checked
   * once subscribed and then now and then. `stop` once the response is no longer followed.
   */
  follow(model: string, id: string): { signal: AbortSignal; stop: StopWatching } {
    const cancelled = new AbortController();
    const watch = this.watch(model, id, () => cancelled.abort());
    const checkMark = (): void => {
      this.commands
        .exists(storedResponseKeys(id).cancelled)
        .then((found) => found === 1 && cancelled.abort())
        .catch(() => undefined);
    };
    void watch.subscribed.then(checkMark);
    const check = setInterval(checkMark, CANCEL_CHECK_MS);
    check.unref();
    return {
      signal: cancelled.signal,
      stop: () => {
        clearInterval(check);
        watch.stop();
      },
    };
  }

  private subscribe(channel: string): Promise<void> {
    let subscribing = this.subscribed.get(channel);
    if (!subscribing) {
      subscribing = Promise.resolve(this.subscriber.ssubscribe(channel)).then(
        () => undefined,
        (error: Error) => {
          // Tried again by the next watch; meanwhile the caller's slow check of the mark covers it.
          this.subscribed.delete(channel);
          this.logger.warn(`cancel messages of ${channel} not subscribed: ${error.message}`);
        },
      );
      this.subscribed.set(channel, subscribing);
    }
    return subscribing;
  }
}
