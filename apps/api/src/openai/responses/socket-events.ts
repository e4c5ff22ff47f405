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
  /** `"stream_id":…,`, put first in every event of a lane's response (the events are JSON objects). */
  private readonly lane: string;

  constructor(
    private readonly socket: WebSocket,
    streamId?: string,
  ) {
    this.lane = streamId === undefined ? '' : `"stream_id":${JSON.stringify(streamId)},`;
  }

  get isOpen(): boolean {
    return this.sent;
  }

  open(): void {
    // A WebSocket has no headers to send first.
  }

  send(json: string): void {
    this.sent = true;
    if (this.socket.readyState === this.socket.OPEN) this.socket.send(this.lane === '' ? json : `{${this.lane}${json.slice(1)}`);
  }

  end(): void {
    // The connection outlives its responses.
  }
}

/**
 * OpenAI's `error` event of WebSocket mode: the HTTP status the same failure would have had and
 * the error body's fields, `{type: "error", status, error: {type, code, message, param}}`.
 */
export function errorEvent(error: OpenAiError, streamId?: string): string {
  return JSON.stringify({ type: 'error', status: error.status, error: error.toBody().error, ...(streamId !== undefined ? { stream_id: streamId } : {}) });
}

/**
 * `response.steer.failed` for a steer this service does not take: steering (queued input committed
 * to a successor response) is not offered, which OpenAI's `steering_not_supported` says; the
 * input comes back for the client to send in its next `response.create`.
 */
export function steerRefusal(previousResponseId: string, input: unknown): string {
  return JSON.stringify({
    type: 'response.steer.failed',
    sequence_number: 0,
    steer: { previous_response_id: previousResponseId, input },
    error: {
      type: 'invalid_request_error',
      code: 'steering_not_supported',
      message: 'Steering is not supported here: send the input in the next response.create once this response has ended.',
    },
  });
}
