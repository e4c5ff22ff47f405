/**
 * A benchmark-only OpenAI-compatible upstream that streams chat completions at a set rate per
 * stream with as little CPU as it can: every chunk is built once at start, and one timer ticks
 * every 1000 / FAST_UPSTREAM_TOKENS_PER_SECOND ms and writes one token to every open stream, so a
 * thousand streams cost one timer, not a thousand. Each answer is `max_tokens` tokens (100 without
 * it), then a finish chunk, a usage chunk and `[DONE]`. It records when a client closed a stream
 * before its end (`GET /stats`), on the clock every local process shares (epoch ms, sub-ms), so a
 * benchmark can tell how soon a cancel reached it.
 *
 * Run as its own process (its CPU measured apart): `tsx bench/common/fast-upstream-server.ts`
 * with FAST_UPSTREAM_PORT (0: any; it prints `listening on <port>`).
 */
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

const TOKENS_PER_SECOND = Number(process.env.FAST_UPSTREAM_TOKENS_PER_SECOND ?? 100);
const DEFAULT_TOKENS = 100;
const TOKEN = ' x';

const chunk = (delta: object, finishReason: string | null, extra: object = {}): Buffer =>
  Buffer.from(
    `data: ${JSON.stringify({ id: 'chatcmpl-fast', object: 'chat.completion.chunk', created: 0, model: 'fast', choices: [{ index: 0, delta, finish_reason: finishReason }], ...extra })}\n\n`,
  );
const ROLE = chunk({ role: 'assistant', content: '' }, null);
const TOKEN_CHUNK = chunk({ content: TOKEN }, null);
const FINISH = chunk({}, 'length');
const DONE = Buffer.from('data: [DONE]\n\n');
const usageChunk = (prompt: number, completion: number): Buffer =>
  Buffer.from(
    `data: ${JSON.stringify({ id: 'chatcmpl-fast', object: 'chat.completion.chunk', created: 0, model: 'fast', choices: [], usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } })}\n\n`,
  );

const epochMs = (): number => performance.timeOrigin + performance.now();

interface OpenStream {
  response: ServerResponse;
  left: number;
  total: number;
}

const open = new Set<OpenStream>();
const stats = { streams: 0, completed: 0, closedEarly: [] as number[] };

setInterval(() => {
  for (const stream of open) {
    if (stream.left > 0) {
      stream.response.write(TOKEN_CHUNK);
      stream.left--;
      continue;
    }
    open.delete(stream);
    stats.completed++;
    stream.response.end(Buffer.concat([FINISH, usageChunk(1, stream.total), DONE]));
  }
}, 1000 / TOKENS_PER_SECOND);

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (part: string) => (body += part));
    request.on('end', () => resolve(body));
    request.on('error', reject);
  });
}

async function chatCompletion(request: IncomingMessage, response: ServerResponse): Promise<void> {
  const body = JSON.parse(await readBody(request)) as { max_tokens?: number; stream?: boolean };
  const total = body.max_tokens ?? DEFAULT_TOKENS;
  if (!body.stream) {
    response.writeHead(200, { 'content-type': 'application/json' });
    const content = TOKEN.repeat(total);
    response.end(
      JSON.stringify({
        id: 'chatcmpl-fast',
        object: 'chat.completion',
        created: 0,
        model: 'fast',
        choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'length' }],
        usage: { prompt_tokens: 1, completion_tokens: total, total_tokens: total + 1 },
      }),
    );
    return;
  }
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  response.write(ROLE);
  const stream: OpenStream = { response, left: total, total };
  stats.streams++;
  open.add(stream);
  response.on('close', () => {
    if (open.delete(stream)) stats.closedEarly.push(epochMs());
  });
}

const server = createServer((request, response) => {
  if (request.method === 'POST' && request.url === '/v1/chat/completions') {
    chatCompletion(request, response).catch(() => response.destroy());
    return;
  }
  if (request.method === 'GET' && request.url === '/stats') {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ ...stats, open: open.size }));
    return;
  }
  if (request.method === 'GET' && request.url === '/v1/models') {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ object: 'list', data: [{ id: 'fast', object: 'model', created: 0, owned_by: 'bench' }] }));
    return;
  }
  response.writeHead(404).end();
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.FAST_UPSTREAM_PORT ?? 0), '127.0.0.1', () => {
  console.log(`listening on ${(server.address() as AddressInfo).port}`);
});
