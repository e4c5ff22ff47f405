import { Injectable } from '@nestjs/common';
import fastifyWebsocket from '@fastify/websocket';
import type { WebSocket } from '@fastify/websocket';
import { ApiEnv } from '@app/config';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiKeyGuard, callerOf } from '../../auth/api-key.guard';
import { toOpenAiError } from '../../errors/http-error-mapping';
import { OpenAiError } from '../../errors/openai-error';
import { ResponsesService } from './responses.service';
import { ConnectionsPerKey } from './socket-connections';
import { ResponseWarmUp } from './response-warm-up';
import { ResponsesSocket } from './responses-socket';

/** A frame over the body limit is answered with an `error` event; one this far over it cannot be read at all (`ws` closes with 1009). */
const FRAME_CEILING_BYTES = 16 * 1024 * 1024;

const tooManyConnections = (max: number): OpenAiError =>
  new OpenAiError(
    429,
    'invalid_request_error',
    `At most ${max} Responses WebSocket connections per API key are open at once on this server.`,
    null,
    'websocket_connections_exceeded',
  );

/**
 * `GET /v1/responses` upgraded to a WebSocket (OpenAI's WebSocket mode), on the API's own port.
 * The upgrade is an HTTP request first: its `Authorization` key is checked as every route's is and
 * a refused one is answered 401 before any upgrade, as is a key over its connections on this
 * instance (429). A plain GET is answered as any unknown route is. Nest's router serves no
 * upgrade, so the route is Fastify's own, added beside Nest's at boot (main.ts).
 */
@Injectable()
export class ResponsesWebSocketRoute {
  private readonly connections: ConnectionsPerKey;
  /** Each upgrade's exchange, for the request log to follow its responses. */
  private readonly exchanges = new WeakMap<FastifyRequest, FastifyReply>();

  constructor(
    private readonly env: ApiEnv,
    private readonly keys: ApiKeyGuard,
    private readonly responses: ResponsesService,
    private readonly warmUp: ResponseWarmUp,
  ) {
    this.connections = new ConnectionsPerKey(env.RESPONSES_WS_MAX_CONNECTIONS_PER_KEY);
  }

  async install(fastify: FastifyInstance): Promise<void> {
    await fastify.register(fastifyWebsocket, { options: { maxPayload: Math.max(FRAME_CEILING_BYTES, 4 * this.env.BODY_LIMIT_BYTES) } });
    // In a plugin of its own, registered after the WebSocket plugin's: it sees this route.
    await fastify.register((scope, _options, done) => {
      scope.route({
        method: 'GET',
        url: '/v1/responses',
        preValidation: (request, reply, done) => this.admit(request, reply, done),
        handler: (_request, reply) => reply.callNotFound(),
        wsHandler: (socket, request) => this.serve(socket, request),
      });
      done();
    });
  }

  /** The upgrade's key and its room for one more connection; refused upgrades get their HTTP error. */
  private admit(request: FastifyRequest, reply: FastifyReply, done: () => void): void {
    if (!request.ws) return done();
    let release: (() => void) | undefined;
    try {
      this.keys.authenticate(request);
      release = this.connections.take(callerOf(request));
      if (!release) throw tooManyConnections(this.env.RESPONSES_WS_MAX_CONNECTIONS_PER_KEY);
    } catch (error) {
      const refusal = toOpenAiError(error);
      void reply.code(refusal.status).send(refusal.toBody());
      return;
    }
    // The socket's end, however it comes (closed, refused by `ws`, reset), gives the place back.
    request.raw.socket.once('close', release);
    this.exchanges.set(request, reply);
    done();
  }

  private serve(socket: WebSocket, request: FastifyRequest): void {
    const exchange = this.exchanges.get(request);
    if (!exchange) {
      socket.close(1011, 'not admitted');
      return;
    }
    new ResponsesSocket(socket, {
      responses: this.responses,
      warmUp: this.warmUp,
      owner: callerOf(request),
      exchange,
      frameLimitBytes: this.env.BODY_LIMIT_BYTES,
      lifetimeMs: this.env.RESPONSES_WS_CONNECTION_LIMIT_MS,
      pingIntervalMs: this.env.RESPONSES_WS_PING_INTERVAL_MS,
    }).start();
  }
}
