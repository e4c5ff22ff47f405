import { Logger } from '@nestjs/common';
import type { WebSocket } from '@fastify/websocket';
import type { FastifyReply } from 'fastify';
import { toOpenAiError } from '../../errors/http-error-mapping';
import { OpenAiError } from '../../errors/openai-error';
import { validateBody } from '../../request-pipes';
import { CreateResponseDto } from './responses-request.dto';
import type { ResponsesService } from './responses.service';
import { readClientFrame } from './socket-frames';
import { LastResponse } from './socket-last-response';
import type { ResponseWarmUp } from './response-warm-up';
import { SocketEvents, errorEvent } from './socket-events';
import type { SocketTurn } from './socket-turn';

/** What one connection runs on and within. */
export interface SocketContext {
  responses: ResponsesService;
  warmUp: ResponseWarmUp;
  /** The API key's id: it owns every response of the connection. */
  owner: string;
  /** The upgrade's exchange, which the request log follows. */
  exchange: FastifyReply;
  frameLimitBytes: number;
  lifetimeMs: number;
  pingIntervalMs: number;
}

const busy = (): OpenAiError =>
  OpenAiError.invalidRequest(
    'A response is already in progress on this connection: send the next response.create once it has ended, or open another connection.',
    null,
    'response_in_progress',
  );

const lifetimeReached = (): OpenAiError =>
  OpenAiError.invalidRequest(
    'Responses websocket connection limit reached (60 minutes). Create a new websocket connection to continue.',
    null,
    'websocket_connection_limit_reached',
  );

/** A message as `ws` hands it over (a Buffer with its default `binaryType`). */
type RawData = Buffer | ArrayBuffer | Buffer[];

const asBuffer = (data: RawData): Buffer => (Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data));

/**
 * One WebSocket of the Responses API's WebSocket mode: each `response.create` frame runs through
 * the create use case (ResponsesService) as `POST /v1/responses` with `stream: true` would, its
 * events sent as text frames. One response at a time: a second create meanwhile is an `error`
 * event and the running one goes on. A bad frame is an `error` event; the connection stays.
 * Closing the socket cancels the running response (its job is withdrawn or aborted as a departed
 * HTTP client's is); pings find a peer that vanished; the connection lives `lifetimeMs`.
 */
export class ResponsesSocket {
  private static readonly logger = new Logger('ResponsesWebSocket');
  private readonly last = new LastResponse();
  private running: AbortController | undefined;
  private expired = false;
  private answeredPing = true;
  private readonly timers: NodeJS.Timeout[] = [];

  constructor(
    private readonly socket: WebSocket,
    private readonly context: SocketContext,
  ) {}

  start(): void {
    const { socket, context } = this;
    socket.on('message', (data, isBinary) => this.receive(asBuffer(data), isBinary));
    socket.on('pong', () => (this.answeredPing = true));
    socket.on('close', () => this.closed());
    this.timers.push(setTimeout(() => this.expire(), context.lifetimeMs));
    this.timers.push(setInterval(() => this.ping(), context.pingIntervalMs));
  }

  private receive(data: Buffer, isBinary: boolean): void {
    const acceptedAt = Date.now();
    let frame;
    try {
      frame = readClientFrame(data, isBinary, this.context.frameLimitBytes);
      if (frame.type === 'response.processed') return;
      if (this.running) throw busy();
      if (this.expired) throw lifetimeReached();
    } catch (error) {
      this.sendError(toOpenAiError(error));
      return;
    }
    const turn = new AbortController();
    this.running = turn;
    void this.run(frame.body, frame.generate, acceptedAt, turn.signal).finally(() => {
      this.running = undefined;
      if (this.expired) this.closeForLifetime();
    });
  }

  /** One response, start to end; every failure ends as an event, never as a rejection. */
  private async run(body: Record<string, unknown>, generate: boolean, acceptedAt: number, clientGone: AbortSignal): Promise<void> {
    const events = new SocketEvents(this.socket);
    let ended = false;
    const socket: SocketTurn = {
      events,
      recall: (id) => this.last.recall(id),
      remember: (record) => {
        ended = true;
        this.last.remember(record);
      },
    };
    try {
      const request = await validateBody(body, CreateResponseDto);
      const call = { request, owner: this.context.owner, acceptedAt, clientGone, reply: this.context.exchange, socket };
      await (generate ? this.context.responses.create(call) : this.context.warmUp.prepare(call));
    } catch (error) {
      const failure = toOpenAiError(error);
      if (failure.status >= 500) ResponsesSocket.logger.error(`response.create failed: ${failure.message}`);
      // Once its events began, the response told its own failure (`response.failed`).
      if (!events.isOpen) this.sendError(failure);
    } finally {
      if (!ended) this.last.failed(body.previous_response_id);
    }
  }

  private sendError(error: OpenAiError): void {
    if (this.socket.readyState === this.socket.OPEN) this.socket.send(errorEvent(error));
  }

  /** The lifetime is over: closed now when idle, else once the running response has ended. */
  private expire(): void {
    this.expired = true;
    if (!this.running) this.closeForLifetime();
  }

  private closeForLifetime(): void {
    this.sendError(lifetimeReached());
    this.socket.close(1000, 'websocket_connection_limit_reached');
  }

  /** A peer that has not answered the last ping is gone (a dropped network sends no close). */
  private ping(): void {
    if (!this.answeredPing) {
      this.socket.terminate();
      return;
    }
    this.answeredPing = false;
    this.socket.ping();
  }

  private closed(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.running?.abort();
  }
}
