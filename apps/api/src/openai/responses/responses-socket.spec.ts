import { EventEmitter } from 'node:events';
import type { WebSocket } from '@fastify/websocket';
import type { FastifyReply } from 'fastify';
import type { ResponseWarmUp } from './response-warm-up';
import type { CreateResponseCall, ResponsesService } from './responses.service';
import { MAX_RUNNING_LANES, MAX_WAITING_PER_LANE, ResponsesSocket } from './responses-socket';

/** The parts of a `ws` socket the session uses, recording what it sends and how it closes. */
class FakeSocket extends EventEmitter {
  readonly OPEN = 1;
  readyState = 1;
  readonly sent: Array<Record<string, unknown>> = [];
  closedWith: number | undefined;
  pings = 0;

  send(json: string): void {
    this.sent.push(JSON.parse(json) as Record<string, unknown>);
  }

  close(code: number): void {
    this.closedWith = code;
    this.readyState = 3;
    this.emit('close');
  }

  ping(): void {
    this.pings++;
  }

  terminate(): void {
    this.close(1006);
  }

  frame(value: unknown): void {
    this.emit('message', Buffer.from(JSON.stringify(value)), false);
  }
}

/** A create use case whose responses end when the test says, sending one event each as they start. */
class HeldResponses {
  readonly calls: CreateResponseCall[] = [];
  private readonly ends: Array<() => void> = [];

  create(call: CreateResponseCall): Promise<void> {
    this.calls.push(call);
    call.socket!.events.send(JSON.stringify({ type: 'response.created', sequence_number: 0 }));
    return new Promise((resolve) => this.ends.push(resolve));
  }

  endNext(): void {
    this.ends.shift()?.();
  }

  /** Ends the response of the `index`th call (0 the first) and every one begun before it. */
  endThrough(index: number): void {
    const ended = this.calls.length - this.ends.length;
    for (let at = ended; at <= index; at++) this.endNext();
  }
}

const tick = (ms = 0): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const create = { type: 'response.create', model: 'tiny-chat', input: 'Hi' };

function session(lifetimeMs = 60_000, pingIntervalMs = 60_000) {
  const socket = new FakeSocket();
  const responses = new HeldResponses();
  new ResponsesSocket(socket as unknown as WebSocket, {
    responses: responses as unknown as ResponsesService,
    warmUp: {} as ResponseWarmUp,
    owner: 'key',
    exchange: {} as FastifyReply,
    frameLimitBytes: 1024 * 1024,
    lifetimeMs,
    pingIntervalMs,
  }).start();
  return { socket, responses };
}

describe('ResponsesSocket', () => {
  it('refuses a second response.create while one runs, and takes one once it has ended', async () => {
    const { socket, responses } = session();
    socket.frame(create);
    await tick();
    socket.frame(create);
    await tick();
    expect(responses.calls).toHaveLength(1);
    expect(socket.sent.at(-1)).toMatchObject({ type: 'error', error: { code: 'response_in_progress' } });
    responses.endNext();
    await tick();
    socket.frame(create);
    await tick();
    expect(responses.calls).toHaveLength(2);
    socket.close(1000);
  });

  it('cancels the running response when the socket closes', async () => {
    const { socket, responses } = session();
    socket.frame(create);
    await tick();
    const { clientGone } = responses.calls[0];
    expect(clientGone.aborted).toBe(false);
    socket.close(1000);
    expect(clientGone.aborted).toBe(true);
  });

  it('lets a running response finish at the lifetime, then ends the connection', async () => {
    const { socket, responses } = session(30);
    socket.frame(create);
    await tick(60);
    expect(socket.closedWith).toBeUndefined();
    expect(responses.calls[0].clientGone.aborted).toBe(false);
    responses.endNext();
    await tick();
    expect(socket.sent.at(-1)).toMatchObject({ type: 'error', error: { code: 'websocket_connection_limit_reached' } });
    expect(socket.closedWith).toBe(1000);
  });

  it('runs the creates of a stream_id lane one after another and lanes side by side, each event carrying its lane', async () => {
    const { socket, responses } = session();
    socket.frame({ ...create, stream_id: 'a', input: 'a1' });
    socket.frame({ ...create, stream_id: 'a', input: 'a2' });
    socket.frame({ ...create, stream_id: 'b', input: 'b1' });
    await tick();
    expect(responses.calls.map(({ request }) => request.input)).toEqual(['a1', 'b1']);
    expect(socket.sent).toEqual([
      { stream_id: 'a', type: 'response.created', sequence_number: 0 },
      { stream_id: 'b', type: 'response.created', sequence_number: 0 },
    ]);
    responses.endNext();
    await tick();
    expect(responses.calls.map(({ request }) => request.input)).toEqual(['a1', 'b1', 'a2']);
    expect(socket.sent.at(-1)).toEqual({ stream_id: 'a', type: 'response.created', sequence_number: 0 });
    // The default lane runs beside them, one at a time.
    socket.frame(create);
    socket.frame(create);
    await tick();
    expect(responses.calls).toHaveLength(4);
    const refused = socket.sent.find((event) => event.type === 'error');
    expect(refused).toMatchObject({ type: 'error', error: { code: 'response_in_progress' } });
    expect(refused).not.toHaveProperty('stream_id');
    socket.close(1000);
  });

  it('bounds the lanes running at once and the creates waiting on a lane, naming stream_id', async () => {
    const { socket, responses } = session();
    for (let lane = 0; lane <= MAX_RUNNING_LANES; lane++) socket.frame({ ...create, stream_id: `lane-${lane}` });
    await tick();
    expect(responses.calls).toHaveLength(MAX_RUNNING_LANES);
    expect(socket.sent.find((event) => event.type === 'error')).toMatchObject({
      type: 'error',
      stream_id: `lane-${MAX_RUNNING_LANES}`,
      error: { code: 'stream_limit_reached', param: 'stream_id' },
    });
    for (let waiting = 0; waiting <= MAX_WAITING_PER_LANE; waiting++) socket.frame({ ...create, stream_id: 'lane-0' });
    await tick();
    expect(socket.sent.filter((event) => event.type === 'error')).toHaveLength(2);
    socket.close(1000);
  });

  it("cancels every lane's running response when the socket closes, and runs none of those waiting", async () => {
    const { socket, responses } = session();
    socket.frame({ ...create, stream_id: 'a' });
    socket.frame({ ...create, stream_id: 'a' });
    socket.frame({ ...create, stream_id: 'b' });
    await tick();
    socket.close(1000);
    expect(responses.calls.map(({ clientGone }) => clientGone.aborted)).toEqual([true, true]);
    responses.endThrough(1);
    await tick();
    expect(responses.calls).toHaveLength(2);
  });

  it('answers response.steer with response.steer.failed (steering_not_supported) and keeps the connection', async () => {
    const { socket, responses } = session();
    socket.frame({ type: 'response.steer', previous_response_id: 'resp_1', input: 'Shorter, please.' });
    await tick();
    expect(socket.sent).toEqual([
      {
        type: 'response.steer.failed',
        sequence_number: 0,
        steer: { previous_response_id: 'resp_1', input: 'Shorter, please.' },
        error: { type: 'invalid_request_error', code: 'steering_not_supported', message: expect.any(String) as string },
      },
    ]);
    socket.frame(create);
    await tick();
    expect(responses.calls).toHaveLength(1);
    socket.close(1000);
  });

  it('drops a peer that did not answer the last ping', async () => {
    const { socket } = session(60_000, 20);
    await tick(30);
    expect(socket.pings).toBe(1);
    await tick(25);
    expect(socket.closedWith).toBe(1006);
  });

  it('keeps a peer that answers its pings', async () => {
    const { socket } = session(60_000, 20);
    const answer = setInterval(() => socket.emit('pong'), 5);
    await tick(90);
    clearInterval(answer);
    expect(socket.pings).toBeGreaterThanOrEqual(3);
    expect(socket.closedWith).toBeUndefined();
    socket.close(1000);
  });
});
