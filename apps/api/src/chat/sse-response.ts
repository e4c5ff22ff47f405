import type { ServerResponse } from 'node:http';

/**
 * Server-sent events written straight to the socket: `data: <json>` frames separated by blank
 * lines, ended by `data: [DONE]`. Headers go out with the first frame, so an error found
 * before then can still be an ordinary HTTP error.
 */
export class SseResponse {
  private opened = false;

  constructor(
    private readonly raw: ServerResponse,
    private readonly onOpen: () => string,
  ) {}

  get isOpen(): boolean {
    return this.opened;
  }

  send(json: string): void {
    if (this.raw.destroyed) return;
    if (!this.opened) this.open();
    this.raw.write(`data: ${json}\n\n`);
  }

  end(): void {
    if (this.raw.destroyed) return;
    if (!this.opened) this.open();
    this.raw.end('data: [DONE]\n\n');
  }

  private open(): void {
    this.opened = true;
    this.raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      // Reverse proxies such as nginx must not buffer a token stream.
      'x-accel-buffering': 'no',
    });
    this.raw.write(`data: ${this.onOpen()}\n\n`);
  }
}
