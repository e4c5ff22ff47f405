import type { OutputPart } from '@app/contracts';
import { Logger } from '@nestjs/common';
import type { Server } from 'node:http';
import { GenerationAbortedError } from './inference-engine';
import type { GenerationRequest } from './inference-engine';
import type { OpenAiUpstreamEngine } from './openai-upstream.engine';
import { generate, sampling, serveFixture, startUpstream, stopUpstream, upstreamEngine } from './openai-upstream.fixtures';
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
