import { encodeEventBatch } from '@app/contracts';
import type { RedisClient } from '@app/redis';

interface ChannelBatch {
  events: string[];
  settle: Array<{ resolve: (receivers: number) => void; reject: (error: Error) => void }>;
}

/**
 * Sends the events this worker publishes in one event-loop turn as one SPUBLISH per reply
 * channel: every completion whose API instance is the same shares the message. Order holds:
 * events join their channel's batch in the order they are sent, and batches go out in order on
 * one connection. A turn adds no measurable delay (setImmediate), so time to first token is kept.
 */
export class ReplyBatcher {
  private readonly pending = new Map<string, ChannelBatch>();
  private scheduled = false;

  constructor(private readonly redis: RedisClient) {}

  /** Resolves with how many subscribers heard the batch the event went in. */
  publish(channel: string, encodedEvent: string): Promise<number> {
    let batch = this.pending.get(channel);
    if (!batch) {
      batch = { events: [], settle: [] };
      this.pending.set(channel, batch);
    }
    batch.events.push(encodedEvent);
    const receivers = new Promise<number>((resolve, reject) => batch.settle.push({ resolve, reject }));
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
    return receivers;
  }

  private flush(): void {
    this.scheduled = false;
    for (const [channel, { events, settle }] of this.pending) {
      this.redis.spublish(channel, encodeEventBatch(events)).then(
        (receivers) => settle.forEach(({ resolve }) => resolve(Number(receivers))),
        (error: Error) => settle.forEach(({ reject }) => reject(error)),
      );
    }
    this.pending.clear();
  }
}
