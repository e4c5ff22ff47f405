import { Logger } from '@nestjs/common';
import type { Server } from 'node:http';
import { ContextLengthExceededError, EngineUnavailableError } from './inference-engine';
import type { OpenAiUpstreamEngine } from './openai-upstream.engine';
import { fixture, generate, serveFixture, startUpstream, stopUpstream, streamInPieces, upstreamEngine } from './openai-upstream.fixtures';
import type { EngineOverrides, Handler, Received } from './openai-upstream.fixtures';

/** A tiny OpenAI-compatible server whose answer each test chooses; it records what it was sent. */
describe('OpenAiUpstreamEngine', () => {
  let server: Server;
  let baseUrl: string;
  let handler: Handler;
  /** Each request this test's upstream got; `closedAt` when its response closed (a late close of an earlier test's lands on that test's entry). */
  let received: Received;

  beforeAll(async () => {
    // The engine logs each upstream failure for operators; here they are the expected outcome.
    Logger.overrideLogger(false);
    ({ server, baseUrl } = await startUpstream(
      (request, body, response) => handler(request, body, response),
      (entry) => received.push(entry),
    ));
  });
  afterAll(() => stopUpstream(server));
  beforeEach(() => {
    received = [];
  });

  const engine = (overrides: EngineOverrides = {}): OpenAiUpstreamEngine => upstreamEngine(baseUrl, overrides);

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
});
