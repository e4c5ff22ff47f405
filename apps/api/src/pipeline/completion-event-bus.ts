import { Inject, Injectable, Logger } from '@nestjs/common';
import type { OnApplicationBootstrap } from '@nestjs/common';
import { apiRepliesChannel, eventBatchElements, toTokenEvent } from '@app/contracts';
import type { ReplyTo, TokenEvent } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import { API_INSTANCE_ID, SUBSCRIBER_REDIS } from '../redis/api-redis.module';

export interface TokenEventListener {
  onEvent(event: TokenEvent): void;
  /** A message for this completion could not be read: the stream can no longer be trusted. */
  onMalformed(): void;
  /** The subscriber connection dropped: events published meanwhile are lost. */
  onConnectionLost(): void;
}

/** Releases a subscription; safe to call more than once. */
export type Unsubscribe = () => void;

/**
 * Routes token events to the requests that wait for them. Workers publish the events of every
 * completion this instance serves on one reply channel, subscribed once at boot on the instance's
 * one subscriber connection; each event names its completion, and the bus hands it to that
 * request's listener. A request therefore costs no Redis round trip here, and the number of
 * connections and subscriptions stays the same whatever the load.
 */
@Injectable()
export class CompletionEventBus implements OnApplicationBootstrap {
  private readonly logger = new Logger(CompletionEventBus.name);
  private readonly listeners = new Map<string, TokenEventListener>();
  private readonly observers: Array<(event: TokenEvent) => void> = [];
  private readonly channel: string;
  private subscribed = false;

  constructor(
    @Inject(SUBSCRIBER_REDIS) private readonly subscriber: RedisClient,
    @Inject(API_INSTANCE_ID) instanceId: string,
  ) {
    this.channel = apiRepliesChannel(instanceId);
    subscriber.on('smessage', (channel: string, message: string) => {
      if (channel === this.channel) this.dispatch(message);
    });
    subscriber.on('close', () => {
      this.subscribed = false;
      if (this.listeners.size > 0) this.logger.warn(`Redis subscriber lost; failing ${this.listeners.size} open completions`);
      for (const listener of [...this.listeners.values()]) listener.onConnectionLost();
    });
    // ioredis subscribes again by itself once reconnected, but says 'ready' before Redis confirms
    // it: a job named this channel then, and its worker, hearing nobody, would stop it.
    subscriber.on('ready', () => void this.subscribe().catch(() => undefined));
  }

  /** Subscribe before serving: no job names this channel before its SSUBSCRIBE is confirmed. */
  async onApplicationBootstrap(): Promise<void> {
    await this.subscribe();
  }

  /** (Re)subscribes; confirmed, events reach this instance (ioredis's own resubscription went out before it). */
  private async subscribe(): Promise<void> {
    await this.subscriber.ssubscribe(this.channel);
    if (this.subscriber.status === 'ready') this.subscribed = true;
  }

  /** Whether events can reach this instance; while they cannot, no completion can be followed. */
  get isConnected(): boolean {
    return this.subscribed && this.subscriber.status === 'ready';
  }

  /** Where a worker sends this instance's events: an interactive reply, stopped when nobody hears it. */
  replyTo(): ReplyTo {
    return { channel: this.channel, stopWhenUnheard: true };
  }

  /**
   * Routes this completion's events to `listener` from now on. The reply channel is subscribed
   * already (and again after a reconnect), so nothing goes to Redis.
   */
  listen(completionId: string, listener: TokenEventListener): Unsubscribe {
    if (!this.isConnected) throw new Error('Redis subscriber is not connected');
    this.listeners.set(completionId, listener);
    return () => {
      if (this.listeners.get(completionId) === listener) this.listeners.delete(completionId);
    };
  }

  /** Sees every event of every open completion after it is parsed (metrics and logs), read-only. */
  observe(observer: (event: TokenEvent) => void): void {
    this.observers.push(observer);
  }

  /** A message carries one event or a batch of them (one worker's turn); each goes to its completion, in order. */
  private dispatch(message: string): void {
    let elements: unknown[];
    try {
      elements = eventBatchElements(message);
    } catch {
      this.failMalformed(/"completionId"\s*:\s*"([^"]+)"/.exec(message)?.[1]);
      return;
    }
    for (const element of elements) this.dispatchOne(element);
  }

  private dispatchOne(element: unknown): void {
    let event: TokenEvent;
    try {
      event = toTokenEvent(element);
    } catch {
      const named = (element as { completionId?: unknown } | null)?.completionId;
      this.failMalformed(typeof named === 'string' ? named : undefined);
      return;
    }
    const listener = this.listeners.get(event.completionId);
    if (!listener) return; // a completion this instance no longer serves
    for (const observer of this.observers) observer(event);
    listener.onEvent(event);
  }

  /**
   * A message that is not a valid event fails the completion it names, when it names one.
   * One that names none cannot be placed; if it was a real event, the gap in its completion's
   * sequence numbers fails that completion at the next event (or its silence does).
   */
  private failMalformed(named: string | undefined): void {
    this.logger.warn(`malformed event on ${this.channel}${named ? ` for ${named}` : ''}`);
    if (named !== undefined) this.listeners.get(named)?.onMalformed();
  }
}
