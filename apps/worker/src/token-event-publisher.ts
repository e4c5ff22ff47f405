import { HEARTBEAT_INTERVAL_MS, appendPart, encodeTokenEvent } from '@app/contracts';
import type { CompletionJobData, FinalEventBody, OutputPart, OutputSink, ReplyLog, StoredAnswer, TokenEvent, TokenEventBody } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import type { ReplyBatcher } from './reply-batcher';

/** Output closer together than this goes out as one event: fewer messages at high token rates. */
export const OUTPUT_COALESCE_MS = 5;

/** A resumable reply's log has its expiry pushed back at most this often (and by its final event), not per event. */
const LOG_EXPIRY_REFRESH_MS = 1000;

/**
 * Publishes one attempt's events to the job's reply channel, numbering them in order. It is the
 * engine's output sink: the first part goes out at once (time to first token); later ones are
 * batched (adjacent text merged) while they arrive within OUTPUT_COALESCE_MS of the last send.
 * When nothing has been sent for HEARTBEAT_INTERVAL_MS (a long prefill), a heartbeat says the
 * worker is alive. Publishing never blocks generation: ioredis keeps commands in order on one
 * connection, and the first failure is reported by `finish`.
 *
 * A resumable reply also appends every event to its log (a Redis Stream), and generation stops
 * once its lease is gone (no client has followed it for the grace period). A stored completion's
 * whole answer is written when it ends.
 */
export class TokenEventPublisher implements OutputSink {
  private seq = 0;
  private pending: OutputPart[] = [];
  private lastOutputSentAt = Number.NEGATIVE_INFINITY;
  private flushTimer: NodeJS.Timeout | undefined;
  private lastSentAt = 0;
  private logExpirySetAt = Number.NEGATIVE_INFINITY;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private failure: Error | undefined;
  /** Every part of the answer, merged, when it is to be stored. */
  private readonly answer: OutputPart[] = [];
  private answerKept = false;
  private finalSent = false;

  constructor(
    private readonly redis: RedisClient,
    /** Publishes to the reply channel, together with the other completions' events of this turn. */
    private readonly replies: ReplyBatcher,
    private readonly job: Pick<CompletionJobData, 'id' | 'replyTo' | 'store'>,
    private readonly attempt: number,
    /** Called once when an event cannot be published, or (interactive replies) reaches nobody. */
    private readonly onUndeliverable: () => void = () => undefined,
  ) {}

  /** The first event of an attempt; heartbeats follow whenever the attempt goes quiet. */
  started(workerId: string): void {
    this.send({ type: 'started', workerId });
    this.heartbeatTimer = setInterval(() => {
      if (performance.now() - this.lastSentAt >= HEARTBEAT_INTERVAL_MS) this.send({ type: 'heartbeat' });
      this.checkLease();
    }, HEARTBEAT_INTERVAL_MS / 2);
    this.heartbeatTimer.unref();
  }

  /** This attempt goes quiet for good without a final event: its job went back to the queue. */
  stopHeartbeats(): void {
    clearInterval(this.heartbeatTimer);
  }

  write(part: OutputPart): void {
    if ((part.type === 'text' || part.type === 'reasoning') && part.text.length === 0) return;
    appendPart(this.pending, part);
    if (this.job.store) appendPart(this.answer, part);
    if (this.flushTimer) return;
    const wait = this.lastOutputSentAt + OUTPUT_COALESCE_MS - performance.now();
    if (wait <= 0) this.flushOutput();
    else this.flushTimer = setTimeout(() => this.flushOutput(), wait);
  }

  /**
   * Sends the final event (end or error) after any output still held, and reports a failed
   * publish. Only the first call sends: a completion's stream has one end, so an error found
   * after its `end` went out (an earlier publish failed) fails the job, not the stream again.
   */
  async finish(body: FinalEventBody): Promise<void> {
    if (this.finalSent) {
      if (this.failure) throw this.failure;
      return;
    }
    clearInterval(this.heartbeatTimer);
    this.flushOutput();
    // Before the final event: whoever hears the end finds the answer stored.
    await this.keep(body);
    await this.sendAndWait(body);
    this.finalSent = true;
    if (this.failure) throw this.failure;
  }

  /** A stored answer, or a batch line's failure: written before the job ends, so whoever counts them misses none. */
  private async keep(body: FinalEventBody): Promise<void> {
    const { store } = this.job;
    if (!store) return;
    if (body.type === 'end') {
      const answer: StoredAnswer = { parts: this.answer, finishReason: body.finishReason, usage: body.usage };
      await this.put(store.key, store.field, JSON.stringify(answer), store.ttlMs);
      this.answerKept = true;
    } else if (store.failuresKey !== undefined && store.field !== undefined && !this.answerKept) {
      // An answer kept before its final event failed to go out stays the line's one outcome.
      await this.put(store.failuresKey, store.field, JSON.stringify(body), store.ttlMs);
    }
  }

  private async put(key: string, field: string | undefined, json: string, ttlMs: number): Promise<void> {
    if (field === undefined) {
      await this.redis.set(key, json, 'PX', ttlMs);
      return;
    }
    await Promise.all([this.redis.hset(key, field, json), this.redis.pexpire(key, ttlMs)]);
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
    const { replyTo } = this.job;
    const event: TokenEvent = { ...body, completionId: this.job.id, attempt: this.attempt, seq: this.seq++ };
    this.lastSentAt = performance.now();
    const encoded = encodeTokenEvent(event);
    const final = body.type === 'end' || body.type === 'error';
    // Awaited together: a refused log append (Redis gone, or full) must reject here, not unhandled.
    const [receivers] = await Promise.all([
      replyTo.channel === undefined ? undefined : this.replies.publish(replyTo.channel, encoded),
      replyTo.log && this.appendToLog(replyTo.log, encoded, final),
    ]);
    if (receivers === 0 && !final && replyTo.stopWhenUnheard) this.undeliverable(new Error('no subscriber for the completion'));
  }

  /**
   * In the same order as the publish (one connection). The log outlives the final event by
   * `keepMs`; while events flow its expiry is pushed back every LOG_EXPIRY_REFRESH_MS (a tenth
   * of `keepMs` when that is shorter), so it never lapses mid-stream.
   */
  private async appendToLog(log: ReplyLog, encoded: string, final: boolean): Promise<void> {
    const appended = this.redis.xadd(log.key, 'MAXLEN', '~', log.maxEvents, '*', 'e', encoded);
    const now = performance.now();
    if (!final && now - this.logExpirySetAt < Math.min(LOG_EXPIRY_REFRESH_MS, log.keepMs / 10)) {
      await appended;
      return;
    }
    this.logExpirySetAt = now;
    await Promise.all([appended, this.redis.pexpire(log.key, log.keepMs)]);
  }

  /** No client has followed the completion for the grace period: nobody will read the rest. */
  private checkLease(): void {
    const { leaseKey } = this.job.replyTo;
    if (leaseKey === undefined) return;
    this.redis
      .exists(leaseKey)
      .then((live) => {
        if (live === 0) this.undeliverable(new Error('no client followed the completion within its grace period'));
      })
      .catch((error: Error) => this.undeliverable(error));
  }

  private undeliverable(error: Error): void {
    if (this.failure) return;
    this.failure = error;
    this.onUndeliverable();
  }
}
