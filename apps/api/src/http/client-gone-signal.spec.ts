import { createServer, request } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyReply } from 'fastify';
import { clientGoneSignal } from './client-gone-signal';

/** A real request whose response the test holds: `leave` closes the client's socket. */
async function heldRequest(): Promise<{ response: ServerResponse; leave: () => Promise<void>; close: () => void }> {
  let held!: (response: ServerResponse) => void;
  const arrived = new Promise<ServerResponse>((resolve) => (held = resolve));
  const server = createServer((_request: IncomingMessage, response: ServerResponse) => held(response));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = request({ port: (server.address() as AddressInfo).port, host: '127.0.0.1', method: 'POST' });
  client.on('error', () => undefined);
  client.end('{}');
  const response = await arrived;
  return {
    response,
    leave: async () => {
      const closed = new Promise((resolve) => response.once('close', resolve));
      client.destroy();
      await closed;
    },
    close: () => server.close(),
  };
}

const replyOf = (response: ServerResponse) => ({ raw: response }) as unknown as FastifyReply;

describe('clientGoneSignal', () => {
  it('aborts when the client leaves before its answer is complete', async () => {
    const held = await heldRequest();
    try {
      const signal = clientGoneSignal(replyOf(held.response));
      expect(signal.aborted).toBe(false);
      await held.leave();
      expect(signal.aborted).toBe(true);
    } finally {
      held.close();
    }
  });

  it('is aborted from the start when the client left before it was made (during admission)', async () => {
    const held = await heldRequest();
    try {
      await held.leave();
      expect(clientGoneSignal(replyOf(held.response)).aborted).toBe(true);
    } finally {
      held.close();
    }
  });
});
