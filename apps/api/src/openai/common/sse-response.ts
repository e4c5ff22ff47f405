import type { FastifyReply } from 'fastify';
import type { EventSink } from './event-sink';

/**
 * Frame ids of a resumable stream: every frame carries `id: <n>`, counted from 0 over the whole
 * completion, and frames up to `after` (what the client already has) are counted but not sent.
 * The frames are a pure function of the completion's events, so every instance that replays
 * them numbers them alike.
 */
export interface FrameIds {
  after: number;
}

/**
 * Server-sent events written straight to the socket: `data: <json>` frames separated by blank
 * lines, ended by `data: [DONE]`. Headers go out with the first frame (or `open`), so an error
 * found before then can still be an ordinary HTTP error.
 */
export class SseResponse implements EventSink {
  private headersSent = false;
  private firstFrameSent = false;
  private nextId = 0;

  /** @param firstFrame sent before any other frame (OpenAI's role chunk); none for the Responses API's streams. */
  constructor(
    private readonly reply: FastifyReply,
    private readonly firstFrame: string | undefined,
    private readonly ids?: FrameIds,
  ) {}

  get isOpen(): boolean {
    return this.headersSent;
  }

  /** Sends the headers now, before any frame (a resumed stream may have nothing new yet). */
  open(): void {
    if (this.headersSent || this.reply.raw.destroyed) return;
    this.writeHeaders();
    // Now, not with the first frame: a client may be waiting on them (a queued background response's stream).
    this.reply.raw.flushHeaders();
  }

  /** Headers that go out with the first frame, in one write. */
  private writeHeaders(): void {
    if (this.headersSent || this.reply.raw.destroyed) return;
    this.headersSent = true;
    this.reply.hijack();
    this.reply.raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      // Reverse proxies such as nginx must not buffer a token stream.
      'x-accel-buffering': 'no',
    });
  }

  /** @param event the frame's `event:` line (the Responses API names every event); none for Chat Completions. */
  send(json: string, event?: string): void {
    if (!this.firstFrameSent) {
      this.firstFrameSent = true;
      if (this.firstFrame !== undefined) this.frame(this.firstFrame);
    }
    this.frame(json, event);
  }

  /** @param done whether `data: [DONE]` ends the stream (Chat Completions); a Responses stream ends with its last event. */
  end(done = true): void {
    if (this.reply.raw.destroyed) return;
    this.writeHeaders();
    this.reply.raw.end(done ? 'data: [DONE]\n\n' : undefined);
  }

  private frame(json: string, event?: string): void {
    const id = this.nextId++;
    if (this.reply.raw.destroyed || (this.ids && id <= this.ids.after)) return;
    this.writeHeaders();
    const data = event === undefined ? `data: ${json}\n\n` : `event: ${event}\ndata: ${json}\n\n`;
    this.reply.raw.write(this.ids ? `id: ${id}\n${data}` : data);
  }
}
