import type { FastifyInstance } from 'fastify';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';

/**
 * How much of an unwanted upload is read (and thrown away) so that the client gets its error.
 * Past either bound the error is sent anyway and the connection closed.
 */
export const DISCARD_LIMITS = { maxBytes: 64 * 1024 * 1024, maxMs: 10_000 };

/** Requests whose client waits for `100 Continue` and was refused it: their body never comes. */
const refusedContinue = new WeakSet<IncomingMessage>();

/**
 * Reads the rest of a request body and discards it. Resolves true once the body has ended,
 * false when the client went away or a bound was reached first.
 */
export function discardRestOfBody(request: IncomingMessage, limits = DISCARD_LIMITS): Promise<boolean> {
  if (request.complete || request.readableEnded || request.destroyed) return Promise.resolve(request.complete);
  return new Promise((resolve) => {
    let received = 0;
    const finish = (ended: boolean): void => {
      clearTimeout(timer);
      request.off('data', onData).off('end', onEnd).off('close', onClose).off('error', onClose);
      resolve(ended);
    };
    const onData = (chunk: Buffer): void => {
      received += chunk.length;
      if (received > limits.maxBytes) finish(false);
    };
    const onEnd = (): void => finish(true);
    const onClose = (): void => finish(request.complete);
    const timer = setTimeout(() => finish(false), limits.maxMs);
    request.on('data', onData).once('end', onEnd).once('close', onClose).once('error', onClose);
    request.resume();
  });
}

/**
 * An error answered while the client is still uploading (413 above all) used to be sent with
 * `connection: close` at once; the server then closed a socket with unread data, the kernel
 * reset it, and clients saw EPIPE or "connection error" instead of the 413. Now the rest of the
 * body is read and discarded first (bounded), so the answer arrives after the upload, intact.
 *
 * With `Expect: 100-continue` and a Content-Length over the limit, the client is not invited
 * to send the body at all: the 413 goes out at once and Node closes the connection afterwards.
 */
export function installOversizedUploadHandling(fastify: FastifyInstance, server: Server, bodyLimit: number): void {
  server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
    if (Number(request.headers['content-length']) > bodyLimit) refusedContinue.add(request);
    else response.writeContinue();
    server.emit('request', request, response);
  });
  fastify.addHook('onSend', async (request, reply, payload) => {
    if (reply.statusCode >= 400 && !refusedContinue.has(request.raw)) await discardRestOfBody(request.raw);
    return payload;
  });
}
