// What the openai-upstream-*.spec.ts files share: recorded streams, a tiny upstream server, and a way to run a job through the engine.
import type { OutputPart, SamplingParams } from '@app/contracts';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import type { GenerationRequest } from './inference-engine';
import { OpenAiUpstreamEngine } from './openai-upstream.engine';

const FIXTURES = resolve(__dirname, '../../../../test/fixtures/upstream');
export const fixture = (name: string): string => readFileSync(resolve(FIXTURES, name), 'utf8');

export type Handler = (request: IncomingMessage, body: string, response: ServerResponse) => void;

/** Sends `text` as an SSE body in small pieces, so events and lines straddle reads as on a real network. */
export async function streamInPieces(response: ServerResponse, text: string, pieceSize = 7): Promise<void> {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (let at = 0; at < text.length; at += pieceSize) {
    response.write(text.slice(at, at + pieceSize));
    await new Promise((resolve) => setImmediate(resolve));
  }
  response.end();
}

export const serveFixture =
  (name: string): Handler =>
  (_request, _body, response) =>
    void streamInPieces(response, fixture(name));

export const answerWith =
  (status: number, body: unknown): Handler =>
  (_request, _body, response) => {
    response.writeHead(status, { 'content-type': 'application/json' });
    response.end(JSON.stringify(body));
  };

export const sampling: SamplingParams = { temperature: 0, topP: 1, maxTokens: 16, stop: [], frequencyPenalty: 0, presencePenalty: 0, seed: 7 };

/** The requests an upstream got; `closedAt` when a response closed. */
export type Received = Array<{ headers: IncomingMessage['headers']; body: Record<string, unknown>; closedAt?: number }>;

/** Starts an OpenAI-compatible server on a free port that hands each request to `handle`, after passing it to `record`. */
export async function startUpstream(
  handle: Handler,
  record: (entry: Received[number]) => void = () => undefined,
): Promise<{ server: Server; baseUrl: string }> {
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const entry: Received[number] = { headers: request.headers, body: JSON.parse(body) as Record<string, unknown> };
      record(entry);
      response.on('close', () => (entry.closedAt ??= performance.now()));
      handle(request, body, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` };
}

export async function stopUpstream(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

export type EngineOverrides = Partial<ConstructorParameters<typeof OpenAiUpstreamEngine>[0]>;

export const upstreamEngine = (baseUrl: string, overrides: EngineOverrides = {}): OpenAiUpstreamEngine =>
  new OpenAiUpstreamEngine({ baseUrl, apiKey: '', model: 'upstream-model', maxConcurrency: 4, timeoutMs: 5000, contextSize: 4096, ...overrides });

export async function generate(
  upstream: OpenAiUpstreamEngine,
  request: Partial<GenerationRequest> = {},
): Promise<{ parts: OutputPart[]; outcome?: Awaited<ReturnType<OpenAiUpstreamEngine['generate']>>; error?: unknown }> {
  const parts: OutputPart[] = [];
  try {
    const outcome = await upstream.generate({
      messages: [{ role: 'user', content: 'Hello' }],
      sampling,
      signal: new AbortController().signal,
      ...request,
      output: { write: (part) => parts.push(part) },
    });
    return { parts, outcome };
  } catch (error) {
    return { parts, error };
  }
}
