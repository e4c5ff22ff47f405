import type OpenAI from 'openai';
import type { Queue } from 'bullmq';
import { waitFor } from './service-stack';

type Tier = 'priority' | 'default' | 'flex';

/**
 * For tests of the order a queue serves requests in, on a model whose one slot a long answer
 * holds (a synthetic engine: 300 tokens 10 ms apart): sends requests one after another, each once
 * the one before waits in the queue, and says when each started (BullMQ's processedOn).
 */
export class Backlog {
  /** Each request's answer, by its completion id once it has ended. */
  private readonly answers: Array<Promise<{ id: string }>> = [];

  constructor(
    private readonly queue: Queue,
    private readonly model: string,
  ) {}

  /**
   * Holds the model's one slot with a long answer of `client` first, streamed: the slot is busy
   * once its first chunk is out (polling the queue's active count missed it once on a loaded machine).
   */
  static async behindBusySlot(queue: Queue, model: string, client: OpenAI): Promise<Backlog> {
    const backlog = new Backlog(queue, model);
    // No max_tokens: the whole 300 tokens, 3 s of the one slot.
    const stream = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'busy' }], stream: true });
    const chunks = stream[Symbol.asyncIterator]();
    const first = await chunks.next();
    if (first.done) throw new Error('the busy answer ended before its first chunk');
    const { id } = first.value;
    backlog.answers.push(
      (async () => {
        while (!(await chunks.next()).done);
        return { id };
      })(),
    );
    return backlog;
  }

  /** Queues `count` short requests (20 tokens each) of `client` in `tier`; returns their indexes. */
  async add(client: OpenAI, count: number, tier: Tier = 'default'): Promise<number[]> {
    const indexes: number[] = [];
    for (let sent = 0; sent < count; sent++) {
      const waitingBefore = await this.waiting();
      indexes.push(this.answers.length);
      this.answers.push(
        client.chat.completions.create({ model: this.model, messages: [{ role: 'user', content: `${tier} ${sent}` }], service_tier: tier, max_tokens: 20 }),
      );
      await waitFor('the request to wait', async () => (await this.waiting()) > waitingBefore);
    }
    return indexes;
  }

  /** When each request's job started, in the order they were sent. */
  async startTimes(): Promise<number[]> {
    const done = await Promise.all(this.answers);
    return Promise.all(done.map(async (answer) => (await this.queue.getJob(answer.id))?.processedOn ?? NaN));
  }

  private async waiting(): Promise<number> {
    return (await this.queue.getWaitingCount()) + (await this.queue.getPrioritizedCount());
  }
}
