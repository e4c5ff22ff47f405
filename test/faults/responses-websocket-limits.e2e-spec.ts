import WebSocket from 'ws';
import { ResponsesSocketClient, finalResponse } from '../support/responses-socket';
import { STACK_API_KEY, STACK_MODEL, ServiceStack, waitFor } from '../support/service-stack';

const LIFETIME_MS = 6000;
// Long enough that a pong from a loaded machine (CI on 2 cores) is not taken for a dead peer.
const PING_INTERVAL_MS = 1000;
const MAX_PER_KEY = 2;

/** A raw `ws` client's upgrade: opened, or refused with the HTTP status and body the server answered. */
function upgrade(url: string, apiKey: string): Promise<{ socket: WebSocket } | { status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url.replace(/^http/, 'ws') + '/responses', { headers: { authorization: `Bearer ${apiKey}` } });
    socket.once('open', () => resolve({ socket }));
    socket.once('unexpected-response', (_request, response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString()));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    socket.once('error', reject);
  });
}

/**
 * The bounds of the Responses WebSocket mode on a private stack whose limits are short: the
 * upgrade's key and the connections per key, the connection's lifetime, the keep-alive ping, and
 * cancellation when the client goes (one worker, one sequence, so a cancelled job is plain to see).
 */
describe('Responses WebSocket limits', () => {
  let stack: ServiceStack;
  const opened: WebSocket[] = [];

  beforeAll(async () => {
    stack = await ServiceStack.start({
      name: 'responses-ws',
      workers: 1,
      parallelSequences: 1,
      apiEnv: {
        AFFINITY: 'false',
        RESPONSES_WS_CONNECTION_LIMIT_MS: String(LIFETIME_MS),
        RESPONSES_WS_PING_INTERVAL_MS: String(PING_INTERVAL_MS),
        RESPONSES_WS_MAX_CONNECTIONS_PER_KEY: String(MAX_PER_KEY),
      },
    });
  });
  afterEach(() => {
    for (const socket of opened.splice(0)) socket.terminate();
  });
  afterAll(() => stack.stop());

  const open = async (): Promise<WebSocket> => {
    const result = await upgrade(stack.baseUrl, STACK_API_KEY);
    if (!('socket' in result)) throw new Error(`upgrade refused: ${result.status} ${result.body}`);
    opened.push(result.socket);
    return result.socket;
  };

  it('answers an upgrade with a wrong key 401 as HTTP, and a plain GET as before', async () => {
    const refused = await upgrade(stack.baseUrl, 'sk-not-a-key');
    expect(refused).toMatchObject({ status: 401 });
    expect(JSON.parse((refused as { body: string }).body)).toEqual({
      error: { type: 'invalid_request_error', code: 'invalid_api_key', param: null, message: 'Incorrect API key provided.' },
    });
    const plain = await fetch(`${stack.baseUrl}/responses`, { headers: { authorization: `Bearer ${STACK_API_KEY}` } });
    expect(plain.status).toBe(404);
    expect(((await plain.json()) as { error: { type: string } }).error.type).toBe('invalid_request_error');
  });

  it('bounds the connections of one key on an instance, and frees a place when one closes', async () => {
    const sockets = [await open(), await open()];
    const refused = await upgrade(stack.baseUrl, STACK_API_KEY);
    expect(refused).toMatchObject({ status: 429 });
    expect(JSON.parse((refused as { body: string }).body)).toMatchObject({ error: { code: 'websocket_connections_exceeded' } });
    sockets[0].close();
    await waitFor('a place to be free again', async () => {
      const result = await upgrade(stack.baseUrl, STACK_API_KEY);
      if (!('socket' in result)) return undefined;
      opened.push(result.socket);
      return true;
    });
  });

  it('pings the client to keep the connection alive', async () => {
    const socket = await open();
    const pinged = new Promise<number>((resolve) => {
      const at = Date.now();
      socket.once('ping', () => resolve(Date.now() - at));
    });
    expect(await pinged).toBeLessThan(PING_INTERVAL_MS * 3);
    // `ws` answers pings itself: answered, the connection lives on past several intervals.
    await new Promise((resolve) => setTimeout(resolve, PING_INTERVAL_MS * 3));
    expect(socket.readyState).toBe(WebSocket.OPEN);
  }, 15_000);

  it('ends a connection at its lifetime with websocket_connection_limit_reached, then closes it', async () => {
    const client = new ResponsesSocketClient(stack.baseUrl, STACK_API_KEY);
    const openedAt = Date.now();
    const turn = await client.turn({ model: STACK_MODEL, input: 'Hi.', max_output_tokens: 16 });
    expect(finalResponse(turn).status).toMatch(/^(completed|incomplete)$/);
    const ending = await client.next(LIFETIME_MS * 2);
    expect(ending).toMatchObject({ type: 'error', status: 400, error: { code: 'websocket_connection_limit_reached' } });
    expect(Date.now() - openedAt).toBeGreaterThanOrEqual(LIFETIME_MS - 100);
    await waitFor('the socket to close', () => Promise.resolve(client.closed));
    expect(client.closed?.code).toBe(1000);
  }, 20_000);

  it('cancels the running job when the client disconnects', async () => {
    const queue = stack.queue();
    const socket = await open();
    const events: Array<{ type: string; response?: { id: string } }> = [];
    socket.on('message', (data: Buffer) => events.push(JSON.parse(data.toString()) as (typeof events)[number]));
    socket.send(JSON.stringify({ type: 'response.create', model: STACK_MODEL, input: 'Tell me everything.', temperature: 0, max_output_tokens: 4000 }));
    await waitFor('some output', () => Promise.resolve(events.filter((event) => event.type === 'response.output_text.delta').length > 5));
    const responseId = events[0].response!.id;
    const disconnectedAt = Date.now();
    socket.terminate();

    const job = await waitFor('the job to fail as cancelled', async () => {
      const found = await queue.getJob(responseId);
      return found?.finishedOn ? found : undefined;
    });
    expect(job.failedReason).toMatch(/cancelled/);
    expect(job.finishedOn! - disconnectedAt).toBeLessThan(2000);
    expect(events.some((event) => event.type === 'response.completed')).toBe(false);
  });
});
