import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { toOpenAiError } from '../errors/http-error-mapping';
import { OpenAiError } from '../errors/openai-error';
import { sendOpenAiError } from '../errors/openai-exception.filter';

/** What Node's HTTP parser reports before there is a request for Fastify to route. */
export function clientErrorToOpenAi(code: string | undefined): OpenAiError {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return new OpenAiError(431, 'invalid_request_error', 'The request headers are too large.', null, 'request_headers_too_large');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new OpenAiError(408, 'invalid_request_error', 'The request was not received in time.', null, 'request_timeout');
    default:
      return OpenAiError.invalidRequest('The request is not valid HTTP/1.1.', null, 'invalid_http_request');
  }
}

function rawResponse(error: OpenAiError): string {
  const body = JSON.stringify(error.toBody());
  const reason = error.status === 431 ? 'Request Header Fields Too Large' : error.status === 408 ? 'Request Timeout' : 'Bad Request';
  return [
    `HTTP/1.1 ${error.status} ${reason}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

/**
 * Fastify's clientErrorHandler: malformed HTTP, headers over the limit and request timeouts
 * get an OpenAI-shaped answer too (Fastify's default writes `{"error":"Bad Request",...}`).
 * As Node does, nothing is written once a response has started on the socket.
 */
export function openAiClientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const pending = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (socket.writable && !pending?.headersSent) socket.write(rawResponse(clientErrorToOpenAi(error.code)));
  socket.destroy();
}

/** Fastify's frameworkErrors: a malformed URL or an over-long parameter, refused by the router before any hook. */
export function openAiFrameworkErrorHandler(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  sendOpenAiError(reply, toOpenAiError(error));
}
