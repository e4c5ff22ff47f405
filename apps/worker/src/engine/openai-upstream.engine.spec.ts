import type { OutputPart, SamplingParams } from '@app/contracts';
import { Logger } from '@nestjs/common';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { ContextLengthExceededError, EngineUnavailableError, GenerationAbortedError, UpstreamRejectedError } from './inference-engine';
import type { GenerationRequest } from './inference-engine';
import { OpenAiUpstreamEngine } from './openai-upstream.engine';

const FIXTURES = resolve(__dirname, '../../../../test/fixtures/upstream');
const fixture = (name: string): string => readFileSync(resolve(FIXTURES, name), 'utf8');

type Handler = (request: IncomingMessage, body: string, response: ServerResponse) => void;

/** Sends `text` as an SSE body in small pieces, so events and lines straddle reads as on a real network. */
async function streamInPieces(response: ServerResponse, text: string, pieceSize = 7): Promise<void> {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (let at = 0; at < text.length; at += pieceSize) {
    response.write(text.slice(at, at + pieceSize));
    await new Promise((resolve) => setImmediate(resolve));
  }
  response.end();
}

const serveFixture =
  (name: string): Handler =>
  (_request, _body, response) =>
    void streamInPieces(response, fixture(name));

const answerWith =
  (status: number, body: unknown): Handler =>
  (_request, _body, response) => {
    response.writeHead(status, { 'content-type': 'application/json' });
    response.end(JSON.stringify(body));
  };

const sampling: SamplingParams = { temperature: 0, topP: 1, maxTokens: 16, stop: [], frequencyPenalty: 0, presencePenalty: 0, seed: 7 };

/** A tiny OpenAI-compatible server whose answer each test chooses; it records what it was sent. */
describe('OpenAiUpstreamEngine', () => {
  let server: Server;
  let baseUrl: string;
  let handler: Handler;
  /** Each request this test's upstream got; `closedAt` when its response closed (a late close of an earlier test's lands on that test's entry). */
  let received: Array<{ headers: IncomingMessage['headers']; body: Record<string, unknown>; closedAt?: number }>;

  beforeAll(async () => {
    // The engine logs each upstream failure for operators; here they are the expected outcome.
    Logger.overrideLogger(false);
    server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const entry: (typeof received)[number] = { headers: request.headers, body: JSON.parse(body) as Record<string, unknown> };
        received.push(entry);
        response.on('close', () => (entry.closedAt ??= performance.now()));
        handler(request, body, response);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  beforeEach(() => {
    received = [];
  });

  const engine = (overrides: Partial<ConstructorParameters<typeof OpenAiUpstreamEngine>[0]> = {}): OpenAiUpstreamEngine =>
    new OpenAiUpstreamEngine({ baseUrl, apiKey: '', model: 'upstream-model', maxConcurrency: 4, timeoutMs: 5000, contextSize: 4096, ...overrides });

  async function generate(
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

  describe('reads recorded streams', () => {
    it("vLLM's: content chunks, a finish chunk, usage in a chunk with empty choices", async () => {
      handler = serveFixture('vllm-text.sse');
      const { parts, outcome } = await generate(engine());
      expect(parts).toEqual(['Alice', ' was', ' beginning', ' to get'].map((text) => ({ type: 'text', choice: 0, text })));
      expect(outcome).toEqual({
        text: 'Alice was beginning to get',
        finishReason: 'length',
        usage: { prompt_tokens: 21, completion_tokens: 5, total_tokens: 26 },
      });
    });

    it("the upstream's cached prompt tokens (vLLM's prompt_tokens_details), passed on in usage", async () => {
      const usage = { prompt_tokens: 21, total_tokens: 26, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 16 } };
      const text = fixture('vllm-text.sse').replace(/"usage":\{[^}]*\}/, `"usage":${JSON.stringify(usage)}`);
      handler = (_request, _body, response) => void streamInPieces(response, text);
      const { outcome } = await generate(engine());
      expect(outcome?.usage).toEqual(usage);
    });

    it("a reasoning model's thinking, as reasoning_content (llama.cpp, DeepSeek) or reasoning (newer vLLM), and its reasoning tokens", async () => {
      const chunk = (delta: object, extra: object = {}) =>
        `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: null }], ...extra })}\n\n`;
      const usage = { prompt_tokens: 9, completion_tokens: 4, total_tokens: 13, completion_tokens_details: { reasoning_tokens: 3 } };
      const body = [
        chunk({ role: 'assistant', content: '' }),
        chunk({ reasoning_content: 'Let me' }),
        chunk({ reasoning: ' think.' }),
        chunk({ content: 'Yes.' }),
        `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`,
        `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [], usage })}\n\n`,
        'data: [DONE]\n\n',
      ].join('');
      handler = (_request, _body, response) => void streamInPieces(response, body);
      const { parts, outcome } = await generate(engine(), {
        messages: [
          { role: 'user', content: 'Hi' },
          { role: 'assistant', content: 'Hello', reasoning: 'A greeting.' },
          { role: 'user', content: 'Sure?' },
        ],
        thinking: false,
      });
      expect(parts).toEqual([
        { type: 'reasoning', choice: 0, text: 'Let me' },
        { type: 'reasoning', choice: 0, text: ' think.' },
        { type: 'text', choice: 0, text: 'Yes.' },
      ]);
      expect(outcome?.usage).toEqual(usage);
      // Sent back where reasoning servers read it, and thinking off as OpenAI names it.
      expect((received[0].body.messages as unknown[])[1]).toEqual({ role: 'assistant', content: 'Hello', reasoning_content: 'A greeting.' });
      expect(received[0].body.reasoning_effort).toBe('none');
    });

    it("vLLM's parallel tool calls: the first fragment of each with its id and name, then its arguments", async () => {
      handler = serveFixture('vllm-tool-calls.sse');
      const { parts, outcome } = await generate(engine());
      expect(parts).toEqual([
        { type: 'tool_call', choice: 0, index: 0, id: 'chatcmpl-tool-a1', name: 'get_weather', arguments: '' },
        { type: 'tool_call', choice: 0, index: 0, arguments: '{"city": "' },
        { type: 'tool_call', choice: 0, index: 0, arguments: 'Paris"}' },
        { type: 'tool_call', choice: 0, index: 1, id: 'chatcmpl-tool-b2', name: 'get_time', arguments: '' },
        { type: 'tool_call', choice: 0, index: 1, arguments: '{"zone": "CET"}' },
      ]);
      expect(outcome).toEqual({
        text: '',
        toolCalls: [
          { id: 'chatcmpl-tool-a1', name: 'get_weather', arguments: '{"city": "Paris"}' },
          { id: 'chatcmpl-tool-b2', name: 'get_time', arguments: '{"zone": "CET"}' },
        ],
        finishReason: 'tool_calls',
        usage: { prompt_tokens: 180, completion_tokens: 34, total_tokens: 214 },
      });
    });

    it('log probabilities beside the text, `bytes: null` read as the UTF-8 of the token, and forwards the request for them', async () => {
      handler = serveFixture('vllm-logprobs.sse');
      const { parts, outcome } = await generate(engine(), { logprobs: { top: 2 } });
      expect(received[0].body).toMatchObject({ logprobs: true, top_logprobs: 2 });
      const alice = { token: 'Alice', logprob: -0.25, bytes: [65, 108, 105, 99, 101] };
      expect(parts).toEqual([
        { type: 'text', choice: 0, text: 'Alice' },
        { type: 'logprobs', choice: 0, content: [{ ...alice, top_logprobs: [alice, { token: 'The', logprob: -1.75, bytes: [84, 104, 101] }] }] },
        { type: 'text', choice: 0, text: ' was' },
        {
          type: 'logprobs',
          choice: 0,
          content: [
            {
              token: ' was',
              logprob: -0.5,
              bytes: [32, 119, 97, 115],
              top_logprobs: [
                { token: ' was', logprob: -0.5, bytes: [32, 119, 97, 115] },
                { token: ' is', logprob: -9999, bytes: [32, 105, 115] },
              ],
            },
          ],
        },
      ]);
      expect(outcome?.text).toBe('Alice was');
    });

    it("llama.cpp server's: usage on the finish chunk itself", async () => {
      handler = serveFixture('llamacpp-text.sse');
      const { parts, outcome } = await generate(engine());
      expect(parts.map((part) => part.type === 'text' && part.text).join('')).toBe('The fox ran');
      expect(outcome).toEqual({ text: 'The fox ran', finishReason: 'stop', usage: { prompt_tokens: 14, completion_tokens: 3, total_tokens: 17 } });
    });

    it('a complete answer whose connection closes without [DONE], keep-alive comments between chunks', async () => {
      handler = serveFixture('llamacpp-no-done.sse');
      const { outcome, error } = await generate(engine());
      expect(error).toBeUndefined();
      expect(outcome).toEqual({ text: 'Hello there', finishReason: 'stop', usage: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 } });
    });

    it("llama.cpp's `error:` line for a prompt over its context: context_length_exceeded with its message", async () => {
      handler = serveFixture('llamacpp-context-error.sse');
      const { error } = await generate(engine());
      expect(error).toBeInstanceOf(ContextLengthExceededError);
      expect((error as Error).message).toBe('the request exceeds the available context size, try increasing it');
    });

    it("vLLM's error event before the first token: unavailable, so another worker may take the job", async () => {
      handler = serveFixture('vllm-error-first.sse');
      const { parts, error } = await generate(engine());
      expect(parts).toEqual([]);
      expect(error).toBeInstanceOf(EngineUnavailableError);
    });

    it("vLLM's error event after output: a failed answer, never a retry", async () => {
      handler = serveFixture('vllm-error-mid-stream.sse');
      const { parts, error } = await generate(engine());
      expect(parts).toEqual([{ type: 'text', choice: 0, text: 'Once upon' }]);
      expect(error).toBeInstanceOf(Error);
      expect(error).not.toBeInstanceOf(EngineUnavailableError);
      expect((error as Error).message).toMatch(/Engine loop has died/);
    });

    it('a stream cut short (no finish_reason, no [DONE]) is a failure, not a short answer', async () => {
      handler = serveFixture('cut-short.sse');
      const { parts, error } = await generate(engine());
      expect(parts).toHaveLength(2);
      expect(error).toBeInstanceOf(Error);
      expect(error).not.toBeInstanceOf(EngineUnavailableError);
      expect((error as Error).message).toMatch(/finish_reason/);
    });
  });

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

  it('closes the upstream request at once when the job is cancelled mid-answer', async () => {
    handler = (_request, _body, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = { choices: [{ index: 0, delta: { content: ' word' }, finish_reason: null }] };
      const timer = setInterval(() => response.write(`data: ${JSON.stringify(chunk)}\n\n`), 5);
      response.on('close', () => clearInterval(timer));
    };
    const controller = new AbortController();
    let abortedAt = 0;
    const parts: OutputPart[] = [];
    const running = engine().generate({
      messages: [{ role: 'user', content: 'Go on' }],
      sampling,
      signal: controller.signal,
      output: {
        write: (part) => {
          parts.push(part);
          if (parts.length === 3) {
            abortedAt = performance.now();
            controller.abort();
          }
        },
      },
    });
    await expect(running).rejects.toBeInstanceOf(GenerationAbortedError);
    await new Promise<void>((resolve) => {
      const check = (): void => void (received[0]?.closedAt !== undefined ? resolve() : setTimeout(check, 5));
      check();
    });
    expect(received).toHaveLength(1);
    expect(received[0].closedAt! - abortedAt).toBeGreaterThanOrEqual(0);
    expect(received[0].closedAt! - abortedAt).toBeLessThan(250);
  });

  it('forwards every option of the job, streamed with usage, and a bearer key only when one is set', async () => {
    handler = serveFixture('llamacpp-text.sse');
    const request: Partial<GenerationRequest> = {
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' }] },
        { role: 'tool', content: '{"temp":21}', toolCallId: 'call_1' },
      ],
      sampling: {
        temperature: 0.7,
        topP: 0.9,
        maxTokens: 64,
        stop: ['\n\n'],
        frequencyPenalty: 0.5,
        presencePenalty: -0.5,
        seed: 42,
        logitBias: [
          { token: 300, bias: 5 },
          { token: 12, bias: -100 },
        ],
      },
      tools: {
        definitions: [{ name: 'get_weather', description: 'Current weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } }],
        choice: { type: 'function', name: 'get_weather' },
        // A named choice is one call (OpenAI's), whatever parallel_tool_calls says.
        parallel: true,
      },
      responseFormat: { type: 'json_schema', name: 'reply', schema: { type: 'object', properties: { answer: { type: 'string' } } } },
    };
    await generate(engine({ model: 'Qwen/Qwen2.5-7B-Instruct' }), request);
    await generate(engine({ apiKey: 'sk-upstream-secret' }), { responseFormat: { type: 'json_object' } });

    const [first, second] = received;
    expect(first.body).toEqual({
      model: 'Qwen/Qwen2.5-7B-Instruct',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Weather in Paris?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
        },
        { role: 'tool', content: '{"temp":21}', tool_call_id: 'call_1' },
      ],
      stream: true,
      stream_options: { include_usage: true },
      temperature: 0.7,
      top_p: 0.9,
      max_tokens: 64,
      stop: ['\n\n'],
      frequency_penalty: 0.5,
      presence_penalty: -0.5,
      seed: 42,
      logit_bias: { '300': 5, '12': -100 },
      tools: [
        {
          type: 'function',
          function: { name: 'get_weather', description: 'Current weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
        },
      ],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      parallel_tool_calls: false,
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'reply', schema: { type: 'object', properties: { answer: { type: 'string' } } }, strict: true },
      },
    });
    expect(first.headers.authorization).toBeUndefined();
    expect(second.body.response_format).toEqual({ type: 'json_object' });
    expect(second.body).not.toHaveProperty('stop');
    expect(second.body).not.toHaveProperty('logprobs');
    expect(second.body).not.toHaveProperty('logit_bias');
    expect(second.headers.authorization).toBe('Bearer sk-upstream-secret');
  });
});
