import type { FastifyReply } from 'fastify';

/** Aborts when the client goes away before its answer is complete, or is aborted already if it has gone. */
export function clientGoneSignal(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  const abortUnlessAnswered = (): void => {
    if (!reply.raw.writableFinished) controller.abort();
  };
  if (reply.raw.destroyed) abortUnlessAnswered();
  else reply.raw.on('close', abortUnlessAnswered);
  return controller.signal;
}
