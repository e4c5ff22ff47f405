import { HEARTBEAT_INTERVAL_MS, completionEventsChannel, encodeTokenEvent } from '@app/contracts';
import type { TokenEvent, TokenEventBody } from '@app/contracts';
import type { RedisClient } from '@app/redis';

/** Deltas closer together than this are sent as one event: fewer messages at high token rates. */
export const DELTA_COALESCE_MS = 5;

/**
 * Publishes one attempt's events on a completion's channel, numbering them in order. The first
 * delta goes out at once (time to first token); later ones are merged while they arrive within
 * DELTA_COALESCE_MS of the last send. When nothing has been sent for HEARTBEAT_INTERVAL_MS (a
 * long prefill), a heartbeat says the worker is alive. Publishing never blocks generation:
 * ioredis keeps commands in order on one connection, and the first failure is reported by `finish`.
 */
export class TokenEventPublisher {
  private readonly channel: string;
  private seq = 0;
  private pendingText = '';
  private lastDeltaSentAt = 0;
  private flushTimer: NodeJS.Timeout | undefined;
  private lastSentAt = 0;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private failure: Error | undefined;

  constructor(
    private readonly redis: RedisClient,
    completionId: string,
    private readonly attempt: number,
    /** Called once when an event cannot be published or reaches nobody: the answer is wasted. */
    private readonly onUndeliverable: () => void = () => undefined,
  ) {
    this.channel = completionEventsChannel(completionId);
  }

  /** The first event of an attempt; heartbeats follow whenever the attempt goes quiet. */
  started(workerId: string): void {
    this.send({ type: 'started', workerId });
    this.heartbeatTimer = setInterval(() => {
      if (performance.now() - this.lastSentAt >= HEARTBEAT_INTERVAL_MS) this.send({ type: 'heartbeat' });
    }, HEARTBEAT_INTERVAL_MS / 2);
    this.heartbeatTimer.unref();
  }

  delta(text: string): void {
    if (text.length === 0) return;
    this.pendingText += text;
    if (this.flushTimer) return;
    const wait = this.lastDeltaSentAt + DELTA_COALESCE_MS - performance.now();
    if (wait <= 0) this.flushDelta();
    else this.flushTimer = setTimeout(() => this.flushDelta(), wait);
  }

  /** Sends the final event (end or error) after any text still held, and reports a failed publish. */
  async finish(body: Extract<TokenEventBody, { type: 'end' | 'error' }>): Promise<void> {
    clearInterval(this.heartbeatTimer);
    this.flushDelta();
    await this.sendAndWait(body);
    if (this.failure) throw this.failure;
  }

  private flushDelta(): void {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    if (this.pendingText.length === 0) return;
    const text = this.pendingText;
    this.pendingText = '';
    this.lastDeltaSentAt = performance.now();
    this.send({ type: 'delta', text });
  }

  private send(body: TokenEventBody): void {
    this.sendAndWait(body).catch((error: Error) => this.undeliverable(error));
  }

  /**
   * The API subscribes before it enqueues and unsubscribes when its client is gone, so an event
   * that reaches no subscriber means nobody will ever read this answer (its API instance died,
   * or gave up on it): stop generating it.
   */
  private async sendAndWait(body: TokenEventBody): Promise<void> {
    const event: TokenEvent = { ...body, attempt: this.attempt, seq: this.seq++ };
    this.lastSentAt = performance.now();
    const receivers = await this.redis.spublish(this.channel, encodeTokenEvent(event));
    if (receivers === 0 && body.type !== 'end' && body.type !== 'error') this.undeliverable(new Error('no subscriber for the completion'));
  }

  private undeliverable(error: Error): void {
    if (this.failure) return;
    this.failure = error;
    this.onUndeliverable();
  }
}
