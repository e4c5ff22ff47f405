import OpenAI from 'openai';
import { request } from 'node:http';
import { assertMatchesSchema } from '../support/openai-schema';
import { rawHttp } from '../support/raw-http';
import { STACK_API_KEY, STACK_MODEL, ServiceStack } from '../support/service-stack';

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

function errorIn(text: string): ErrorBody['error'] {
  const body = JSON.parse(text) as ErrorBody;
  assertMatchesSchema('ErrorResponse', body);
  return body.error;
}

/** 8 MiB of chat request, as a client with a runaway prompt would send it; the limit is 1 MiB. */
const OVERSIZED = 8 * 1024 * 1024;

function oversizedChatBody(): string {
  return JSON.stringify({ model: STACK_MODEL, messages: [{ role: 'user', content: 'x'.repeat(OVERSIZED) }] });
}

/**
 * Errors that arise before any controller runs: Node's HTTP parser, Fastify's router and body
 * parser, the body limit, the request timeout. Each must reach the client, in OpenAI's shape.
 * A private API (no worker: nothing here reaches a queue) with a short request timeout.
 */
describe('errors from the HTTP layer', () => {
  let stack: ServiceStack;
  let baseUrl: string;
  const auth = { authorization: `Bearer ${STACK_API_KEY}` };

  beforeAll(async () => {
    stack = await ServiceStack.start({ name: 'http-layer', workers: 0, apiEnv: { REQUEST_TIMEOUT_MS: '1500' } });
    baseUrl = stack.baseUrl;
  });
  afterAll(() => stack.stop());

  async function post(body: string | undefined, headers: Record<string, string> = { 'content-type': 'application/json' }) {
    const response = await fetch(`${baseUrl}/chat/completions`, { method: 'POST', headers: { ...auth, ...headers }, body });
    return { status: response.status, error: errorIn(await response.text()) };
  }

  describe('from Node’s HTTP parser, on a raw socket', () => {
    it.each([
      ['a request line that is not HTTP', 'GARBAGE\r\n\r\n'],
      ['a header line without a colon', 'GET /v1/models HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n'],
      ['both Content-Length and chunked', 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n'],
    ])('400 for %s', async (_name, data) => {
      const { status, headers, body } = await rawHttp(baseUrl, data);
      expect(status).toBe(400);
      expect(headers).toContain('content-type: application/json');
      expect(errorIn(body)).toMatchObject({ type: 'invalid_request_error', code: 'invalid_http_request' });
    });

    it('431 for headers over 16 KB', async () => {
      const { status, body } = await rawHttp(baseUrl, `GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
      expect(status).toBe(431);
      expect(errorIn(body)).toMatchObject({ code: 'request_headers_too_large' });
    });

    it('408 for a request whose body stops coming', async () => {
      const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${STACK_API_KEY}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"model":`;
      const startedAt = Date.now();
      const { status, body } = await rawHttp(baseUrl, head, 10_000);
      expect(status).toBe(408);
      expect(errorIn(body)).toMatchObject({ code: 'request_timeout' });
      // REQUEST_TIMEOUT_MS is 1.5 s and Node checks every second.
      expect(Date.now() - startedAt).toBeLessThan(4_000);
    });
  });

  describe('from the router and the body parser', () => {
    it.each([
      ['GET', '/v1/no-such-route'],
      ['POST', '/v1/no-such-route'],
      ['DELETE', '/v1/chat/completions'],
      ['GET', '/'],
    ])('404 for %s %s', async (method, path) => {
      const response = await fetch(new URL(path, baseUrl), { method, headers: auth });
      expect(response.status).toBe(404);
      expect(errorIn(await response.text())).toMatchObject({ type: 'invalid_request_error', code: 'not_found' });
    });

    it('400 for a malformed URL', async () => {
      const { status, body } = await rawHttp(baseUrl, 'GET /v1/%zz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      expect(status).toBe(400);
      expect(errorIn(body)).toMatchObject({ code: 'invalid_url' });
    });

    it.each([
      ['malformed JSON', '{"model": "tiny-chat", "messages": [', /JSON/],
      ['an empty body', undefined, /empty/],
      ['a prototype-poisoning key', '{"__proto__": {"admin": true}}', /JSON/],
    ])('400 for %s', async (_name, body, message) => {
      const { status, error } = await post(body);
      expect(status).toBe(400);
      expect(error.message).toMatch(message);
      expect(error.message).not.toMatch(/content-type is set|FST_/);
    });

    it.each([['text/plain'], ['application/x-www-form-urlencoded'], ['application/xml']])('400 for a %s body, saying JSON is expected', async (type) => {
      const { status, error } = await post('{"model":"tiny-chat"}', { 'content-type': type });
      expect(status).toBe(400);
      expect(error.message).toMatch(/must be JSON/);
    });

    it('400 naming the field for nesting deeper than 64 levels, and 64 levels pass the parser', async () => {
      const nested = (depth: number) => `${'['.repeat(depth)}1${']'.repeat(depth)}`;
      const deep = await post(`{"model":"tiny-chat","messages":[{"role":"user","content":"hi"}],"unknown_field":${nested(2_000)}}`);
      expect(deep.status).toBe(400);
      expect(deep.error).toMatchObject({ param: 'unknown_field', code: 'nesting_too_deep' });
      // One level for the body itself: 63 more are still parsed, and refused as an unknown field.
      const allowed = await post(`{"model":"tiny-chat","messages":[{"role":"user","content":"hi"}],"unknown_field":${nested(63)}}`);
      expect(allowed.status).toBe(400);
      expect(allowed.error.param).toBe('unknown_field');
      expect(allowed.error.message).toMatch(/Unrecognized request argument/);
    });
  });

  describe('413 for a body over the limit, received by real clients', () => {
    it('plain fetch gets the 413 every time (it got EPIPE in 7 of 20 tries before)', async () => {
      const body = oversizedChatBody();
      for (let attempt = 0; attempt < 10; attempt++) {
        const { status, error } = await post(body);
        expect(status).toBe(413);
        expect(error.code).toBe('request_too_large');
      }
    });

    it('the openai client reports the 413 as an API error, not a connection error', async () => {
      const client = new OpenAI({ baseURL: baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
      const content = 'x'.repeat(OVERSIZED);
      for (let attempt = 0; attempt < 10; attempt++) {
        const failure = await client.chat.completions.create({ model: STACK_MODEL, messages: [{ role: 'user', content }] }).catch((error: unknown) => error);
        expect(failure).toBeInstanceOf(OpenAI.APIError);
        expect(failure).toMatchObject({ status: 413, code: 'request_too_large' });
      }
    });

    it('a chunked upload without Content-Length gets the 413 after its last chunk', async () => {
      const piece = new Uint8Array(64 * 1024).fill(0x20);
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent >= OVERSIZED) return controller.close();
          sent += piece.length;
          controller.enqueue(piece);
        },
      });
      const response = await fetch(`${baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body,
        duplex: 'half',
      });
      expect(response.status).toBe(413);
      expect(errorIn(await response.text()).code).toBe('request_too_large');
      expect(sent).toBe(OVERSIZED);
    });

    it('with Expect: 100-continue, the 413 comes before the body is sent', async () => {
      const outcome = await new Promise<{ status: number; body: string; continued: boolean }>((resolve, reject) => {
        let continued = false;
        const req = request(`${baseUrl}/chat/completions`, {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json', 'content-length': String(OVERSIZED), expect: '100-continue' },
        });
        req.on('continue', () => (continued = true));
        req.on('response', (response) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (text += chunk));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text, continued }));
        });
        req.on('error', reject);
        req.flushHeaders();
      });
      expect(outcome.continued).toBe(false);
      expect(outcome.status).toBe(413);
      expect(errorIn(outcome.body).code).toBe('request_too_large');
    });

    it('with Expect: 100-continue and a body within the limit, the client is told to go on', async () => {
      const body = JSON.stringify({ model: STACK_MODEL, messages: 'not a list' });
      const status = await new Promise<number>((resolve, reject) => {
        const req = request(`${baseUrl}/chat/completions`, {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), expect: '100-continue' },
        });
        req.on('continue', () => req.end(body));
        req.on('response', (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        });
        req.on('error', reject);
        req.flushHeaders();
      });
      expect(status).toBe(400);
    });
  });

  it('still serves after all of that', async () => {
    const response = await fetch(`${baseUrl}/models`, { headers: auth });
    expect(response.status).toBe(200);
  });
});
