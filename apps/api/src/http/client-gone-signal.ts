import type { FastifyReply } from 'fastify';

/** Aborts when the client goes away before its answer is complete. */
export function clientGoneSignal(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.on('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}
