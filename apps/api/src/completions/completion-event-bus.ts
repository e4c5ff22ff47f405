import { Inject, Injectable, Logger } from '@nestjs/common';
import { completionEventsChannel, decodeTokenEvent } from '@app/contracts';
import type { TokenEvent } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import { SUBSCRIBER_REDIS } from './api-redis.providers';

export interface TokenEventListener {
  onEvent(event: TokenEvent): void;
  /** A message on the channel could not be read: the stream can no longer be trusted. */
  onMalformed(): void;
  /** The subscriber connection dropped: events published meanwhile are lost. */
  onConnectionLost(): void;
}

/** Releases a subscription; safe to call more than once. */
export type Unsubscribe = () => void;

/**
 * Routes token events from the instance's single subscriber connection to the request that
 * waits for them: one channel per open completion, multiplexed in process, so the number of
 * RedisClient connections stays the same whatever the load.
 */
@Injectable()
export class CompletionEventBus {
  private readonly logger = new Logger(CompletionEventBus.name);
  private readonly listeners = new Map<string, TokenEventListener>();
  private readonly observers: Array<(channel: string, event: TokenEvent) => void> = [];

  constructor(@Inject(SUBSCRIBER_REDIS) private readonly subscriber: RedisClient) {
    subscriber.on('smessage', (channel: string, message: string) => this.dispatch(channel, message));
    subscriber.on('close', () => {
      if (this.listeners.size > 0) this.logger.warn(`RedisClient subscriber lost; failing ${this.listeners.size} open completions`);
      for (const listener of [...this.listeners.values()]) listener.onConnectionLost();
    });
  }

  /** Whether the subscriber is connected; while it is not, no completion can be followed. */
  get isConnected(): boolean {
    return this.subscriber.status === 'ready';
  }

  /** Resolves once RedisClient has confirmed the SUBSCRIBE, so no event published after it is lost. */
  async subscribe(completionId: string, listener: TokenEventListener): Promise<Unsubscribe> {
    if (!this.isConnected) throw new Error('RedisClient subscriber is not connected');
    const channel = completionEventsChannel(completionId);
    this.listeners.set(channel, listener);
    try {
      await this.subscriber.ssubscribe(channel);
    } catch (error) {
      this.listeners.delete(channel);
      throw error;
    }
    return () => {
      if (!this.listeners.delete(channel)) return;
      this.subscriber.sunsubscribe(channel).catch((error: unknown) => {
        // Only possible while RedisClient is away; a channel left subscribed costs dropped messages, nothing more.
        this.logger.warn(`unsubscribe ${channel} failed: ${error instanceof Error ? error.message : String(error)}`);
      });
    };
  }

  /** Sees every event of every open completion after it is parsed (metrics and logs), read-only. */
  observe(observer: (channel: string, event: TokenEvent) => void): void {
    this.observers.push(observer);
  }

  private dispatch(channel: string, message: string): void {
    const listener = this.listeners.get(channel);
    if (!listener) return;
    let event: TokenEvent;
    try {
      event = decodeTokenEvent(message);
    } catch {
      this.logger.warn(`malformed event on ${channel}`);
      listener.onMalformed();
      return;
    }
    for (const observer of this.observers) observer(channel, event);
    listener.onEvent(event);
  }
}
