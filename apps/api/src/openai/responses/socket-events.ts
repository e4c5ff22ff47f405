import type { WebSocket } from '@fastify/websocket';
import type { EventSink } from '../common/event-sink';
import type { OpenAiError } from '../../errors/openai-error';

/**
 * A response's events as WebSocket text frames, one JSON event each: the same objects (with
 * their `sequence_number`) as the SSE stream's `data:` lines. Nothing goes to a socket that has
 * closed; the turn is cancelled then (ResponsesSocket).
 */
export class SocketEvents implements EventSink {
  private sent = false;

  constructor(private readonly socket: WebSocket) {}

  get isOpen(): boolean {
    return this.sent;
  }

  open(): void {
    // A WebSocket has no headers to send first.
  }

  send(json: string): void {
    this.sent = true;
    if (this.socket.readyState === this.socket.OPEN) this.socket.send(json);
  }

  end(): void {
    // The connection outlives its responses.
  }
}

/**
 * OpenAI's `error` event of WebSocket mode: the HTTP status the same failure would have had and
 * the error body's fields, `{type: "error", status, error: {type, code, message, param}}`.
 */
export function errorEvent(error: OpenAiError): string {
  return JSON.stringify({ type: 'error', status: error.status, error: error.toBody().error });
}
