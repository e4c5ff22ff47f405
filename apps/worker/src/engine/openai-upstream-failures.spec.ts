import { Logger } from '@nestjs/common';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ContextLengthExceededError, EngineUnavailableError, UpstreamRejectedError } from './inference-engine';
import type { OpenAiUpstreamEngine } from './openai-upstream.engine';
import { answerWith, generate, startUpstream, stopUpstream, upstreamEngine } from './openai-upstream.fixtures';
import type { EngineOverrides, Handler } from './openai-upstream.fixtures';

/** A tiny OpenAI-compatible server whose answer each test chooses. */
describe('OpenAiUpstreamEngine', () => {
  let server: Server;
  let baseUrl: string;
  let handler: Handler;

  beforeAll(async () => {
    // The engine logs each upstream failure for operators; here they are the expected outcome.
    Logger.overrideLogger(false);
    ({ server, baseUrl } = await startUpstream((request, body, response) => handler(request, body, response)));
  });
  afterAll(() => stopUpstream(server));

  const engine = (overrides: EngineOverrides = {}): OpenAiUpstreamEngine => upstreamEngine(baseUrl, overrides);

  describe('maps HTTP failures', () => {
    it('a 4xx refusal: its status, message, type, param and code, for the client', async () => {
      handler = answerWith(400, {
        error: { message: 'temperature must be at most 2', type: 'invalid_request_error', param: 'temperature', code: 'invalid_value' },
      });
      const { error } = await generate(engine());
      expect(error).toBeInstanceOf(UpstreamRejectedError);
      expect((error as UpstreamRejectedError).message).toBe('temperature must be at most 2');
      expect((error as UpstreamRejectedError).rejection).toEqual({ status: 400, type: 'invalid_request_error', param: 'temperature', code: 'invalid_value' });
    });

    it("a 422 in TGI's words ({error: text, error_type}) keeps its status and message, in OpenAI's type", async () => {
      handler = answerWith(422, { error: 'Input validation error: `top_p` must be > 0.0 and < 1.0', error_type: 'validation' });
      const { error } = await generate(engine());
      expect((error as UpstreamRejectedError).rejection).toEqual({ status: 422, type: 'invalid_request_error', param: null, code: null });
      expect((error as Error).message).toMatch(/top_p/);
    });

    it('a 400 with code context_length_exceeded: ContextLengthExceededError', async () => {
      handler = answerWith(400, {
        error: {
          message: "This model's maximum context length is 512 tokens.",
          type: 'invalid_request_error',
          param: 'messages',
          code: 'context_length_exceeded',
        },
      });
      const { error } = await generate(engine());
      expect(error).toBeInstanceOf(ContextLengthExceededError);
      expect((error as Error).message).toBe("This model's maximum context length is 512 tokens.");
    });

    it.each([500, 502, 503, 429, 408])('a %i before the first token: unavailable', async (status) => {
      handler = answerWith(status, { error: { message: 'busy', type: 'server_error' } });
      expect((await generate(engine())).error).toBeInstanceOf(EngineUnavailableError);
    });

    it.each([401, 403, 404])("a %i says the worker is misconfigured: an engine error, not the client's fault", async (status) => {
      handler = answerWith(status, { error: { message: 'Incorrect API key provided: sk-up***', type: 'invalid_request_error' } });
      const { error } = await generate(engine());
      expect(error).not.toBeInstanceOf(UpstreamRejectedError);
      expect(error).not.toBeInstanceOf(EngineUnavailableError);
      expect(error).toBeInstanceOf(Error);
    });

    it("an error that quotes the worker's key back: the key reaches neither the log nor the error", async () => {
      const apiKey = 'sk-worker-upstream-key-0123456789';
      const logged: string[] = [];
      Logger.overrideLogger({ log: () => undefined, error: () => undefined, warn: (message: string) => logged.push(message) });
      try {
        handler = answerWith(401, { error: { message: `Invalid key: ${apiKey} is not known here`, type: 'invalid_request_error' } });
        const refused = (await generate(engine({ apiKey }))).error as Error;
        handler = answerWith(400, { error: { message: `Bad request from ${apiKey}`, type: 'invalid_request_error' } });
        const rejected = (await generate(engine({ apiKey }))).error as Error;
        expect([refused.message, rejected.message]).toEqual([
          'The upstream server refused this worker (401): Invalid key: *** is not known here',
          'Bad request from ***',
        ]);
        expect(logged).toHaveLength(2);
        expect(logged.join('\n')).not.toContain(apiKey);
      } finally {
        Logger.overrideLogger(false);
      }
    });

    it('a refused connection: unavailable', async () => {
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const port = (closed.address() as AddressInfo).port;
      await new Promise((resolve) => closed.close(resolve));
      const { error } = await generate(engine({ baseUrl: `http://127.0.0.1:${port}/v1` }));
      expect(error).toBeInstanceOf(EngineUnavailableError);
    });

    it('an upstream that goes silent after its headers: unavailable once the timeout passes', async () => {
      handler = (_request, _body, response) => response.writeHead(200, { 'content-type': 'text/event-stream' }).flushHeaders();
      const startedAt = performance.now();
      const { error } = await generate(engine({ timeoutMs: 300 }));
      const tookMs = performance.now() - startedAt;
      expect(error).toBeInstanceOf(EngineUnavailableError);
      expect(tookMs).toBeGreaterThanOrEqual(290);
      expect(tookMs).toBeLessThan(2000);
    });

    it('an upstream that never sends its headers: unavailable once the timeout passes', async () => {
      handler = () => undefined;
      const { error } = await generate(engine({ timeoutMs: 300 }));
      expect(error).toBeInstanceOf(EngineUnavailableError);
    });
  });
});
