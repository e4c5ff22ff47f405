import type { FastifyReply } from 'fastify';

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
export class SseResponse {
  private headersSent = false;
  private firstFrameSent = false;
  private nextId = 0;

  /** @param firstFrame sent before any other frame (OpenAI's role chunk). */
  constructor(
    private readonly reply: FastifyReply,
    private readonly firstFrame: string,
    private readonly ids?: FrameIds,
  ) {}

  get isOpen(): boolean {
    return this.headersSent;
  }

  /** Sends the headers now, before any frame (a resumed stream may have nothing new yet). */
  open(): void {
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

  send(json: string): void {
    if (!this.firstFrameSent) {
      this.firstFrameSent = true;
      this.frame(this.firstFrame);
    }
    this.frame(json);
  }

  end(): void {
    if (this.reply.raw.destroyed) return;
    this.open();
    this.reply.raw.end('data: [DONE]\n\n');
  }

  private frame(json: string): void {
    const id = this.nextId++;
    if (this.reply.raw.destroyed || (this.ids && id <= this.ids.after)) return;
    this.open();
    this.reply.raw.write(this.ids ? `id: ${id}\ndata: ${json}\n\n` : `data: ${json}\n\n`);
  }
}
