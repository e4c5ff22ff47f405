import OpenAI from 'openai';
import type { ResponsesServerEvent } from 'openai/resources/responses/responses';
import { ResponsesWS } from 'openai/resources/responses/ws';

/** One server event as it came off the socket: every one has a `type`; a response's events a `sequence_number`. */
export type SocketEvent = ResponsesServerEvent & { type: string; sequence_number?: number };

const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed', 'error']);

/**
 * openai-node's ResponsesWS on one connection, its events queued as they arrive, so that a test
 * can send a frame and read that turn's events up to its terminal one (or an `error` event).
 */
export class ResponsesSocketClient {
  readonly ws: ResponsesWS;
  private readonly events: SocketEvent[] = [];
  private waiting: (() => void) | undefined;
  closed: { code: number; reason: string } | undefined;

  constructor(baseURL: string, apiKey: string) {
    this.ws = new ResponsesWS(new OpenAI({ baseURL, apiKey, maxRetries: 0 }));
    this.ws.on('event', (event) => this.push(event));
    // An `error` event is also reported as an error of the client: it is read from the events.
    this.ws.on('error', () => undefined);
    this.ws.on('close', (code, reason) => {
      this.closed = { code, reason };
      this.waiting?.();
    });
  }

  /** Sends `response.create` with this body and returns its events up to the terminal one. */
  async turn(body: Record<string, unknown>): Promise<SocketEvent[]> {
    this.ws.send({ type: 'response.create', ...body });
    return this.untilTerminal();
  }

  /** The events that arrive from now up to and including the next terminal one. */
  async untilTerminal(timeoutMs = 30_000): Promise<SocketEvent[]> {
    const taken: SocketEvent[] = [];
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const event = this.events.shift();
      if (event) {
        taken.push(event);
        if (TERMINAL.has(event.type)) return taken;
        continue;
      }
      if (this.closed) throw new Error(`socket closed (${this.closed.code} ${this.closed.reason}) after ${taken.length} events`);
      if (Date.now() > deadline) throw new Error(`no terminal event within ${timeoutMs} ms after ${taken.length} events`);
      await new Promise<void>((resolve) => {
        this.waiting = resolve;
        setTimeout(resolve, 100);
      });
    }
  }

  /** The next event, whatever it is. */
  async next(timeoutMs = 30_000): Promise<SocketEvent> {
    const deadline = Date.now() + timeoutMs;
    while (this.events.length === 0) {
      if (this.closed) throw new Error(`socket closed (${this.closed.code} ${this.closed.reason})`);
      if (Date.now() > deadline) throw new Error(`no event within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        this.waiting = resolve;
        setTimeout(resolve, 100);
      });
    }
    return this.events.shift()!;
  }

  /** Resolves once the connection is open (WebSocket readyState 1: what openai-node's lanes ask before a send). */
  async opened(timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.ws.socket.readyState !== 1) {
      if (this.closed || Date.now() > deadline) throw new Error('the socket did not open');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** Every event received and not yet taken, taken now. */
  drain(): SocketEvent[] {
    return this.events.splice(0);
  }

  close(): void {
    this.ws.close({ code: 1000, reason: 'done' });
  }

  private push(event: SocketEvent): void {
    this.events.push(event);
    this.waiting?.();
  }
}

/** The Response object a turn ended with. */
export function finalResponse(events: SocketEvent[]): OpenAI.Responses.Response {
  const last = events.at(-1) as { type: string; response?: OpenAI.Responses.Response };
  if (!last.response) throw new Error(`the turn ended with ${JSON.stringify(last)}`);
  return last.response;
}
