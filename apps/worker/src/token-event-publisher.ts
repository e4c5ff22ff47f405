import { HEARTBEAT_INTERVAL_MS, appendPart, encodeTokenEvent } from '@app/contracts';
import type { FinalEventBody, OutputPart, OutputSink, ReplyTo, TokenEvent, TokenEventBody } from '@app/contracts';
import type { RedisClient } from '@app/redis';

/** Output closer together than this goes out as one event: fewer messages at high token rates. */
export const OUTPUT_COALESCE_MS = 5;

/**
 * Publishes one attempt's events to the job's reply channel, numbering them in order. It is the
 * engine's output sink: the first part goes out at once (time to first token); later ones are
 * batched (adjacent text merged) while they arrive within OUTPUT_COALESCE_MS of the last send.
 * When nothing has been sent for HEARTBEAT_INTERVAL_MS (a long prefill), a heartbeat says the
 * worker is alive. Publishing never blocks generation: ioredis keeps commands in order on one
 * connection, and the first failure is reported by `finish`.
 */
export class TokenEventPublisher implements OutputSink {
  private seq = 0;
  private pending: OutputPart[] = [];
  private lastOutputSentAt = Number.NEGATIVE_INFINITY;
  private flushTimer: NodeJS.Timeout | undefined;
  private lastSentAt = 0;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private failure: Error | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly completionId: string,
    private readonly replyTo: ReplyTo,
    private readonly attempt: number,
    /** Called once when an event cannot be published, or (interactive replies) reaches nobody. */
    private readonly onUndeliverable: () => void = () => undefined,
  ) {}

  /** The first event of an attempt; heartbeats follow whenever the attempt goes quiet. */
  started(workerId: string): void {
    this.send({ type: 'started', workerId });
    this.heartbeatTimer = setInterval(() => {
      if (performance.now() - this.lastSentAt >= HEARTBEAT_INTERVAL_MS) this.send({ type: 'heartbeat' });
    }, HEARTBEAT_INTERVAL_MS / 2);
    this.heartbeatTimer.unref();
  }

  /** This attempt goes quiet for good without a final event: its job went back to the queue. */
  stopHeartbeats(): void {
    clearInterval(this.heartbeatTimer);
  }

  write(part: OutputPart): void {
    if (part.type === 'text' && part.text.length === 0) return;
    appendPart(this.pending, part);
    if (this.flushTimer) return;
    const wait = this.lastOutputSentAt + OUTPUT_COALESCE_MS - performance.now();
    if (wait <= 0) this.flushOutput();
    else this.flushTimer = setTimeout(() => this.flushOutput(), wait);
  }

  /** Sends the final event (end or error) after any output still held, and reports a failed publish. */
  async finish(body: FinalEventBody): Promise<void> {
    clearInterval(this.heartbeatTimer);
    this.flushOutput();
    await this.sendAndWait(body);
    if (this.failure) throw this.failure;
  }

  private flushOutput(): void {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    if (this.pending.length === 0) return;
    const parts = this.pending;
    this.pending = [];
    this.lastOutputSentAt = performance.now();
    this.send({ type: 'output', parts });
  }

  private send(body: TokenEventBody): void {
    this.sendAndWait(body).catch((error: Error) => this.undeliverable(error));
  }

  /**
   * An API instance subscribes its reply channel before it serves, so an interactive event that
   * reaches no subscriber means that instance is gone (it died or shut down) and nobody will ever
   * read this answer: stop generating it. A client that leaves a live instance is stopped through
   * the cancellations channel instead (the instance's channel still has its subscriber).
   */
  private async sendAndWait(body: TokenEventBody): Promise<void> {
    const event: TokenEvent = { ...body, completionId: this.completionId, attempt: this.attempt, seq: this.seq++ };
    this.lastSentAt = performance.now();
    const receivers = await this.redis.spublish(this.replyTo.channel, encodeTokenEvent(event));
    const final = body.type === 'end' || body.type === 'error';
    if (receivers === 0 && !final && this.replyTo.stopWhenUnheard) this.undeliverable(new Error('no subscriber for the completion'));
  }

  private undeliverable(error: Error): void {
    if (this.failure) return;
    this.failure = error;
    this.onUndeliverable();
  }
}
