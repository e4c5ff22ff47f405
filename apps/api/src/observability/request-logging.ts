import { LogController } from 'fastify';
import type { FastifyServerOptions } from 'fastify';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

export const REQUEST_ID_HEADER = 'x-request-id';

/** An incoming request id is kept only when it is short and plain, so it cannot forge log lines. */
const ACCEPTABLE_REQUEST_ID = /^[A-Za-z0-9._:/+=@-]{1,128}$/;

/** Nest's LOG_LEVEL names, as pino (Fastify's logger) calls them. */
const PINO_LEVELS: Record<string, string> = { fatal: 'fatal', error: 'error', warn: 'warn', log: 'info', debug: 'debug', verbose: 'trace' };

/** The caller's `x-request-id` when it is acceptable, else a new UUID. */
export function requestIdOf(request: IncomingMessage): string {
  const given = request.headers[REQUEST_ID_HEADER];
  return typeof given === 'string' && ACCEPTABLE_REQUEST_ID.test(given) ? given : randomUUID();
}

type RequestLoggingOptions = Pick<FastifyServerOptions, 'logger' | 'genReqId' | 'requestIdHeader' | 'logController'>;

/**
 * Fastify's pino logger writes the request log: one JSON line per request (see RequestTelemetry),
 * with the request id under `requestId`. Nest's own logs stay in Nest's readable format. Headers
 * are never logged; the redaction is a second line of defence for keys and cookies.
 */
export function requestLoggingOptions(logLevel: string): RequestLoggingOptions {
  return {
    logger: {
      level: PINO_LEVELS[logLevel] ?? 'info',
      redact: {
        paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization', 'headers.cookie'],
        censor: '[redacted]',
      },
    },
    requestIdHeader: false,
    genReqId: requestIdOf,
    // Fastify would write two lines per request ("incoming request", "request completed").
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
  };
}
