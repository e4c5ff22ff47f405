import { Logger } from '@nestjs/common';
import type { WebSocket } from '@fastify/websocket';
import type { FastifyReply } from 'fastify';
import { toOpenAiError } from '../../errors/http-error-mapping';
import { OpenAiError } from '../../errors/openai-error';
import { validateBody } from '../../request-pipes';
import { CreateResponseDto } from './responses-request.dto';
import type { ResponsesService } from './responses.service';
import { readClientFrame } from './socket-frames';
import type { CreateFrame } from './socket-frames';
import { LastResponse } from './socket-last-response';
import type { ResponseWarmUp } from './response-warm-up';
import { SocketEvents, errorEvent, steerRefusal } from './socket-events';
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

const laneLimit = (): OpenAiError =>
  OpenAiError.invalidRequest(
    `At most ${MAX_RUNNING_LANES} lanes run at once on a connection, and ${MAX_WAITING_PER_LANE} responses wait on a lane: send this one once another has ended.`,
    'stream_id',
    'stream_limit_reached',
  );

const lifetimeReached = (): OpenAiError =>
  OpenAiError.invalidRequest(
    'Responses websocket connection limit reached (60 minutes). Create a new websocket connection to continue.',
    null,
    'websocket_connection_limit_reached',
  );

/** Lanes (`stream_id`) running a response at once on one connection. */
export const MAX_RUNNING_LANES = 8;
/** Responses waiting behind a lane's running one. */
export const MAX_WAITING_PER_LANE = 16;

/** A `response.create` taken, and when. */
interface Accepted {
  frame: CreateFrame;
  acceptedAt: number;
}

/** One lane: the response it runs, and those waiting their turn behind it (first in, first out). */
interface Lane {
  running: AbortController;
  waiting: Accepted[];
}

/** A message as `ws` hands it over (a Buffer with its default `binaryType`). */
type RawData = Buffer | ArrayBuffer | Buffer[];

const asBuffer = (data: RawData): Buffer => (Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data));

/**
 * One WebSocket of the Responses API's WebSocket mode: each `response.create` frame runs through
 * the create use case (ResponsesService) as `POST /v1/responses` with `stream: true` would, its
 * events sent as text frames. Responses run in lanes: one at a time on the default lane (a second
 * create meanwhile is an `error` event and the running one goes on); on a `stream_id` lane the
 * creates wait their turn, first in first out, while other lanes run beside it, every event
 * carrying its lane's `stream_id` (bounded: MAX_RUNNING_LANES, MAX_WAITING_PER_LANE). A bad frame
 * is an `error` event, a `response.steer` a `response.steer.failed`; the connection stays.
 * Closing the socket cancels every running response (its job is withdrawn or aborted as a
 * departed HTTP client's is) and drops the waiting ones; pings find a peer that vanished; the
 * connection lives `lifetimeMs`.
 */
export class ResponsesSocket {
  private static readonly logger = new Logger('ResponsesWebSocket');
  private readonly last = new LastResponse();
  /** The lanes running a response, by `stream_id` ('' for the default lane). */
  private readonly lanes = new Map<string, Lane>();
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
    let frame: CreateFrame;
    try {
      const read = readClientFrame(data, isBinary, this.context.frameLimitBytes);
      if (read.type === 'response.processed') return;
      if (read.type === 'response.steer') {
        if (this.socket.readyState === this.socket.OPEN) this.socket.send(steerRefusal(read.previousResponseId, read.input));
        return;
      }
      frame = read;
      if (this.expired) throw lifetimeReached();
    } catch (error) {
      this.sendError(toOpenAiError(error));
      return;
    }
    const key = frame.streamId ?? '';
    const lane = this.lanes.get(key);
    try {
      if (lane && frame.streamId === undefined) throw busy();
      if (lane ? lane.waiting.length >= MAX_WAITING_PER_LANE : this.lanes.size >= MAX_RUNNING_LANES) throw laneLimit();
    } catch (error) {
      this.sendError(toOpenAiError(error), frame.streamId);
      return;
    }
    if (lane) lane.waiting.push({ frame, acceptedAt });
    else this.runOn(key, { frame, acceptedAt });
  }

  /** Runs a lane's response, then the next one waiting on it, until none waits. */
  private runOn(key: string, { frame, acceptedAt }: Accepted, waiting: Accepted[] = []): void {
    const lane: Lane = { running: new AbortController(), waiting };
    this.lanes.set(key, lane);
    void this.run(frame, acceptedAt, lane.running.signal).finally(() => {
      this.lanes.delete(key);
      const next = lane.waiting.shift();
      // A waiting create's clock starts with its turn: its wait for a worker is bounded from there.
      if (next && !this.expired && !lane.running.signal.aborted) this.runOn(key, { ...next, acceptedAt: Date.now() }, lane.waiting);
      else if (this.expired && this.lanes.size === 0) this.closeForLifetime();
    });
  }

  /** One response, start to end; every failure ends as an event, never as a rejection. */
  private async run({ body, generate, streamId }: CreateFrame, acceptedAt: number, clientGone: AbortSignal): Promise<void> {
    const events = new SocketEvents(this.socket, streamId);
    let ended = false;
    const socket: SocketTurn = {
      events,
      recall: (id) => this.last.recall(id),
      remember: (record) => {
        ended = true;
        this.last.remember(record, streamId);
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
      if (!events.isOpen) this.sendError(failure, streamId);
    } finally {
      if (!ended) this.last.failed(body.previous_response_id);
    }
  }

  private sendError(error: OpenAiError, streamId?: string): void {
    if (this.socket.readyState === this.socket.OPEN) this.socket.send(errorEvent(error, streamId));
  }

  /** The lifetime is over: closed now when idle, else once the running responses have ended (those waiting are not run). */
  private expire(): void {
    this.expired = true;
    if (this.lanes.size === 0) this.closeForLifetime();
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
    for (const lane of this.lanes.values()) {
      lane.waiting.length = 0;
      lane.running.abort();
    }
  }
}
