import Ajv from 'ajv';
import { LlamaServerProcess } from '@app/worker/engine';
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { REPO_ROOT, workerHealthUrl } from '../tools/local-stack/services';
import OpenAI from 'openai';
import { engineInfill } from './support/llama-reference';
import { assertMatchesEmbeddingsSchema } from './support/openai-embeddings-schema';
import { assertMatchesSchema } from './support/openai-schema';
import { STACK_API_KEY, ServiceStack, waitFor } from './support/service-stack';
import { e2eStack } from './support/stack-env';

/**
 * ENGINE=llama-server: the worker renders the prompt and llama.cpp's own server (the binary
 * `npm run llama-server:build` makes, a child of the worker) runs the model. The same generated
 * models as everywhere, through the official client, compared with the llama engine of the shared
 * stack where both should answer the same: greedy answers of the same prompt are the same text.
 */
describe('ENGINE=llama-server', () => {
  const shared = e2eStack();
  const llamaEngine = new OpenAI({ baseURL: shared.apiUrls[0], apiKey: shared.apiKey, maxRetries: 0 });
  const model = 'tiny-chat';
  const thinking = 'tiny-think';
  const sidecarModel = 'tiny-fables';
  /** tiny-chat's weights with fill-in-the-middle tokens. */
  const fimModel = 'tiny-fim';
  /** tiny-chat on a worker with PROMPT_CACHE=false. */
  const uncachedModel = 'tiny-chat-uncached';
  let stack: ServiceStack;
  let client: OpenAI;
  const question: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Tell me about the rabbit.' }];

  beforeAll(async () => {
    stack = await ServiceStack.start({
      name: 'llama-server',
      workers: 0,
      parallelSequences: 2,
      models: [model, thinking, sidecarModel, fimModel, uncachedModel],
      workerEnv: { ENGINE: 'llama-server' },
    });
    await stack.addWorker({}, model);
    await stack.addWorker({}, thinking);
    await stack.addWorker({}, fimModel);
    client = new OpenAI({ baseURL: stack.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
  });
  afterAll(() => stack?.stop());

  it('answers greedily with the same text as the llama engine, counted by the same tokenizer', async () => {
    const request = { model, messages: question, max_tokens: 24, temperature: 0 };
    const [served, reference] = await Promise.all([client.chat.completions.create(request), llamaEngine.chat.completions.create(request)]);
    assertMatchesSchema('CreateChatCompletionResponse', served);
    expect(served.choices[0].message.content).toMatch(/[a-z]{2,}/);
    expect(served.choices[0].message.content).toBe(reference.choices[0].message.content);
    expect(served.choices[0].finish_reason).toBe(reference.choices[0].finish_reason);
    expect(served.usage?.prompt_tokens).toBe(reference.usage?.prompt_tokens);
    expect(served.usage?.completion_tokens).toBe(reference.usage?.completion_tokens);
  });

  it('streams deltas that add up to the whole answer of the same seeded request, then a usage chunk', async () => {
    const request = { model, messages: question, max_tokens: 30, temperature: 1, seed: 1234 };
    const whole = await client.chat.completions.create(request);
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of await client.chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } })) chunks.push(chunk);
    for (const chunk of chunks) assertMatchesSchema('CreateChatCompletionStreamResponse', chunk);
    const content = chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('');
    expect(chunks.filter((chunk) => chunk.choices[0]?.delta.content).length).toBeGreaterThan(1);
    expect(content).toBe(whole.choices[0].message.content);
    expect(chunks.at(-1)?.usage).toEqual(whole.usage);
  });

  it('ends at max_tokens with finish_reason length, and at a stop sequence without it', async () => {
    const long = await client.chat.completions.create({ model, messages: question, max_tokens: 5, temperature: 0 });
    expect(long.choices[0].finish_reason).toBe('length');
    expect(long.usage?.completion_tokens).toBe(5);
    const text = long.choices[0].message.content!;
    const cut = text.slice(2, 4);
    const stopped = await client.chat.completions.create({ model, messages: question, max_tokens: 5, temperature: 0, stop: [cut] });
    expect(stopped.choices[0].finish_reason).toBe('stop');
    expect(stopped.choices[0].message.content).toBe(text.slice(0, text.indexOf(cut)));
  });

  it('enforces a JSON schema with the project grammar', async () => {
    const schema = {
      type: 'object',
      properties: { name: { type: 'string', maxLength: 12 }, legs: { type: 'integer', minimum: 0, maximum: 8 } },
      required: ['name', 'legs'],
      additionalProperties: false,
    };
    for (const seed of [1, 2, 3]) {
      const completion = await client.chat.completions.create({
        model,
        messages: question,
        seed,
        max_tokens: 80,
        response_format: { type: 'json_schema', json_schema: { name: 'animal', schema, strict: true } },
      });
      expect(completion.choices[0].finish_reason).toBe('stop');
      const answer = JSON.parse(completion.choices[0].message.content!) as { name: string; legs: number };
      expect(Object.keys(answer).sort()).toEqual(['legs', 'name']);
      expect(Number.isInteger(answer.legs) && answer.legs >= 0 && answer.legs <= 8).toBe(true);
    }
  });

  it('answers logprobs whose tokens spell the content, greedy picking the most probable', async () => {
    const completion = await client.chat.completions.create({ model, messages: question, max_tokens: 12, temperature: 0, logprobs: true, top_logprobs: 3 });
    const [{ message, logprobs }] = completion.choices;
    const tokens = logprobs!.content!;
    expect(tokens).toHaveLength(12);
    expect(tokens.map((token) => token.token).join('')).toBe(message.content);
    for (const token of tokens) {
      expect(token.top_logprobs).toHaveLength(3);
      expect(token.logprob).toBeLessThanOrEqual(0);
      expect(token.logprob).toBeCloseTo(token.top_logprobs[0].logprob, 5);
    }
  });

  describe('plain prompts (POST /v1/completions)', () => {
    const prompts = ['The rabbit ran down the hole and', 'Once the fox'];
    const spelled = async (text: string): Promise<number[]> => {
      const response = await fetch(`${new URL(stack.baseUrl).origin}/tokenize`, {
        method: 'POST',
        headers: { authorization: `Bearer ${STACK_API_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model, prompt: text, add_special_tokens: false }),
      });
      return ((await response.json()) as { tokens: number[] }).tokens;
    };

    it('completes text and token ids greedily as the llama engine does, several prompts at once, counted alike', async () => {
      const request = { model, prompt: prompts, max_tokens: 12, temperature: 0 };
      const [served, reference] = await Promise.all([client.completions.create(request), llamaEngine.completions.create(request)]);
      assertMatchesEmbeddingsSchema('CreateCompletionResponse', served);
      expect(served.choices.map((choice) => choice.text)).toEqual(reference.choices.map((choice) => choice.text));
      expect(served.choices.map((choice) => choice.finish_reason)).toEqual(reference.choices.map((choice) => choice.finish_reason));
      expect(served.choices[0].text).toMatch(/[a-z]{2,}/);
      expect(served.usage).toMatchObject({ prompt_tokens: reference.usage?.prompt_tokens, completion_tokens: reference.usage?.completion_tokens });
      const byIds = await client.completions.create({ ...request, prompt: await spelled(prompts[0]) });
      expect(byIds.choices[0].text).toBe(served.choices[0].text);
    });

    it('echoes the prompt before the answer (alone with max_tokens 0), streams deltas that add up to it, and ends at a stop sequence', async () => {
      const request = { model, prompt: prompts[0], max_tokens: 10, temperature: 0 };
      const whole = await client.completions.create(request);
      const echoed = await client.completions.create({ ...request, echo: true });
      expect(echoed.choices[0].text).toBe(prompts[0] + whole.choices[0].text);
      // max_tokens 0 (a harness scoring the prompt): the prompt alone, nothing generated.
      const evaluated = await client.completions.create({ ...request, echo: true, max_tokens: 0 });
      expect(evaluated.choices[0]).toMatchObject({ text: prompts[0], finish_reason: 'length' });
      expect(evaluated.usage?.completion_tokens).toBe(0);
      let streamed = '';
      for await (const chunk of await client.completions.create({ ...request, stream: true })) streamed += chunk.choices[0]?.text ?? '';
      expect(streamed).toBe(whole.choices[0].text);
      const cut = whole.choices[0].text.slice(3, 5);
      const stopped = await client.completions.create({ ...request, stop: [cut] });
      expect(stopped.choices[0]).toMatchObject({ text: whole.choices[0].text.slice(0, whole.choices[0].text.indexOf(cut)), finish_reason: 'stop' });
    });

    it("answers the generated tokens' logprobs, spelling the text; echo with logprobs is a 400 naming echo", async () => {
      const answer = await client.completions.create({ model, prompt: prompts[0], max_tokens: 6, temperature: 0, logprobs: 2 });
      const logprobs = answer.choices[0].logprobs!;
      expect(logprobs.tokens).toHaveLength(6);
      expect(logprobs.tokens!.join('')).toBe(answer.choices[0].text);
      for (const logprob of logprobs.token_logprobs!) expect(logprob).toBeLessThanOrEqual(0);
      const refused = await client.completions.create({ model, prompt: prompts[0], max_tokens: 6, echo: true, logprobs: 2 }).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
      expect((refused as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('echo');
    });

    it("fills in the middle with the model's FIM tokens, as node-llama-cpp's own infill does", async () => {
      const [prefix, suffix] = ['The rabbit', ' and that was the end.'];
      const answer = await client.completions.create({ model: fimModel, prompt: prefix, suffix, max_tokens: 12, temperature: 0 });
      expect(answer.choices[0].text.length).toBeGreaterThan(0);
      expect(answer.choices[0].text).toBe(await engineInfill(fimModel, prefix, suffix, 12));
    });
  });

  it('reports the prompt the server kept from the previous turn as cached tokens', async () => {
    const request = {
      model,
      messages: [{ role: 'user' as const, content: 'Tell me a long story about the wolf and the fox.' }],
      max_tokens: 4,
      temperature: 0,
    };
    await client.chat.completions.create(request);
    const again = await client.chat.completions.create(request);
    expect(again.usage?.prompt_tokens_details?.cached_tokens).toBeGreaterThan(0);
  });

  it('evaluates every prompt whole with PROMPT_CACHE=false', async () => {
    const worker = await stack.addWorker({ PROMPT_CACHE: 'false', MODEL_PATH: resolve(REPO_ROOT, `models/${model}.gguf`) }, uncachedModel);
    try {
      const request = {
        model: uncachedModel,
        messages: [{ role: 'user' as const, content: 'Tell me a long story about the wolf and the fox.' }],
        max_tokens: 4,
      };
      const turns = [await client.chat.completions.create(request), await client.chat.completions.create(request)];
      expect(turns.map((turn) => turn.usage?.prompt_tokens_details?.cached_tokens ?? 0)).toEqual([0, 0]);
      expect(turns[1].usage?.prompt_tokens).toBeGreaterThan(10);
    } finally {
      await worker.stop('SIGTERM', 10_000);
    }
  });

  it('passes thinking on as reasoning_content', async () => {
    const completion = await client.chat.completions.create({ model: thinking, messages: question, max_tokens: 12, temperature: 0 });
    const message = completion.choices[0].message as OpenAI.ChatCompletionMessage & { reasoning_content?: string };
    expect(message.content).toBe('');
    expect(message.reasoning_content).toMatch(/\w/);
    expect(completion.usage?.completion_tokens_details?.reasoning_tokens).toBeGreaterThan(0);
    const plain = await client.chat.completions.create({ model: thinking, messages: question, max_tokens: 12, temperature: 0, reasoning_effort: 'none' });
    expect(plain.choices[0].message.content).toMatch(/\w/);
  });

  const parameters = {
    type: 'object',
    properties: { city: { type: 'string', maxLength: 20 }, days: { type: 'integer', minimum: 1, maximum: 7 }, unit: { enum: ['celsius', 'fahrenheit'] } },
    required: ['city', 'days', 'unit'],
    additionalProperties: false,
  };
  const weather: OpenAI.ChatCompletionTool = { type: 'function', function: { name: 'get_weather', description: 'Weather for a city', parameters } };
  const clock: OpenAI.ChatCompletionTool = { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: {} } } };
  const asked: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is the weather in Paris?' }];

  it('makes the call tool_choice requires, arguments under the schema, streamed as OpenAI streams calls', async () => {
    const valid = new Ajv({ strict: false }).compile(parameters);
    for (const seed of [1, 2, 3, 4, 5]) {
      const args = new Map<number, string>();
      const names = new Map<number, string>();
      let finish: string | null | undefined;
      for await (const chunk of await client.chat.completions.create({
        model,
        messages: asked,
        tools: [weather, clock],
        tool_choice: 'required',
        max_tokens: 100,
        seed,
        stream: true,
      })) {
        assertMatchesSchema('CreateChatCompletionStreamResponse', chunk);
        for (const call of chunk.choices[0]?.delta.tool_calls ?? []) {
          if (call.function?.name) names.set(call.index, call.function.name);
          args.set(call.index, (args.get(call.index) ?? '') + (call.function?.arguments ?? ''));
        }
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      expect(finish).toBe('tool_calls');
      expect(args.size).toBeGreaterThan(0);
      for (const [index, text] of args) {
        const name = names.get(index);
        expect(['get_weather', 'get_time']).toContain(name);
        if (name === 'get_weather') expect(valid(JSON.parse(text))).toBe(true);
        else expect(JSON.parse(text)).toEqual(expect.any(Object));
      }
    }
  });

  it('calls the function tool_choice names, the same call as the llama engine makes greedily', async () => {
    const request = {
      model,
      messages: asked,
      tools: [weather, clock],
      tool_choice: { type: 'function' as const, function: { name: 'get_weather' } },
      max_tokens: 100,
      temperature: 0,
    };
    const [served, reference] = await Promise.all([client.chat.completions.create(request), llamaEngine.chat.completions.create(request)]);
    assertMatchesSchema('CreateChatCompletionResponse', served);
    const [call] = served.choices[0].message.tool_calls as OpenAI.ChatCompletionMessageFunctionToolCall[];
    expect(served.choices[0].finish_reason).toBe('tool_calls');
    expect(call.id).toMatch(/^call_/);
    expect(call.function.name).toBe('get_weather');
    const [referenceCall] = reference.choices[0].message.tool_calls as OpenAI.ChatCompletionMessageFunctionToolCall[];
    expect(JSON.parse(call.function.arguments)).toEqual(JSON.parse(referenceCall.function.arguments));
    expect(served.usage?.prompt_tokens).toBe(reference.usage?.prompt_tokens);
  });

  it('answers the result of the call in the next turn, the conversation rendered as the llama engine renders it', async () => {
    const first = await client.chat.completions.create({ model, messages: asked, tools: [weather], tool_choice: 'required', max_tokens: 100, seed: 3 });
    const message = first.choices[0].message;
    const [call] = message.tool_calls!;
    const request = {
      model,
      messages: [...asked, message, { role: 'tool' as const, tool_call_id: call.id, content: '{"sky": "clear", "celsius": 21}' }],
      tools: [weather],
      max_tokens: 20,
      temperature: 0,
    };
    const [next, reference] = await Promise.all([client.chat.completions.create(request), llamaEngine.chat.completions.create(request)]);
    expect(next.choices[0].message.content).toMatch(/\w/);
    expect(next.usage!.prompt_tokens).toBe(reference.usage!.prompt_tokens);
    expect(next.usage!.prompt_tokens).toBeGreaterThan(first.usage!.prompt_tokens);
  });

  it('leaves the choice to the model with tool_choice auto: text, or calls that parse', async () => {
    const finishes = new Set<string>();
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      const completion = await client.chat.completions.create({ model, messages: asked, tools: [weather], tool_choice: 'auto', max_tokens: 150, seed });
      const { message, finish_reason } = completion.choices[0];
      finishes.add(finish_reason);
      const calls = (message.tool_calls ?? []) as OpenAI.ChatCompletionMessageFunctionToolCall[];
      if (finish_reason === 'tool_calls') expect(calls.length).toBeGreaterThan(0);
      // max_tokens may cut a call short (finish_reason length), as at OpenAI; a finished one parses.
      if (finish_reason === 'tool_calls') for (const call of calls) expect(JSON.parse(call.function.arguments)).toEqual(expect.any(Object));
    }
    expect(finishes.has('tool_calls')).toBe(true);
  });

  it('frees the slot of a cancelled stream at once', async () => {
    const controller = new AbortController();
    const stream = await client.chat.completions.create(
      { model, messages: question, max_tokens: 4000, temperature: 1, stream: true },
      { signal: controller.signal },
    );
    for await (const chunk of stream) if (chunk.choices[0]?.delta.content) break;
    controller.abort();
    // Both slots answer again, the cancelled one among them.
    const started = Date.now();
    await Promise.all([1, 2].map(() => client.chat.completions.create({ model, messages: question, max_tokens: 8 })));
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("serves llama-server's own metrics beside the worker's, and its health behind the worker's readiness", async () => {
    await client.chat.completions.create({ model, messages: question, max_tokens: 4 });
    const health = await workerHealthUrl(stack.workers[0]);
    const metrics = await (await fetch(`${health}/metrics`)).text();
    expect(metrics).toMatch(/^llm_worker_generated_tokens_total\{[^}]*\} [1-9]/m);
    expect(metrics).toMatch(/^llamacpp:tokens_predicted_total [1-9]/m);
    const ready = await fetch(`${health}/health/ready`);
    expect(ready.status).toBe(200);
    expect(((await ready.json()) as { info: Record<string, unknown> }).info.model).toEqual({ status: 'up', name: model, slots: 2 });
  });

  it('uses a llama-server beside it (LLAMA_SERVER_URL) instead of starting one', async () => {
    const sidecar = await LlamaServerProcess.start({
      binary: '',
      modelPath: resolve(REPO_ROOT, 'models/tiny-fables.gguf'),
      slots: 2,
      contextSize: 2048,
      threads: 1,
      gpu: 'false',
      log: () => undefined,
      onLost: () => undefined,
    });
    try {
      const worker = await stack.addWorker({ LLAMA_SERVER_URL: sidecar.url }, sidecarModel);
      const completion = await client.chat.completions.create({ model: sidecarModel, messages: question, max_tokens: 6, temperature: 0 });
      expect(completion.usage?.completion_tokens).toBe(6);
      expect(worker.recentOutput).toContain(`llama-server at ${sidecar.url}: 2 slots of 2048 tokens`);
      expect(worker.recentOutput).not.toContain('llama-server: starting');
    } finally {
      await sidecar.stop();
    }
  });

  it('stops the worker when its llama-server dies, rather than failing every job', async () => {
    const worker = stack.workers[0];
    const server = execFileSync('pgrep', ['-P', String(worker.pid), '-f', 'llama-server'], { encoding: 'utf8' })
      .trim()
      .split('\n')[0];
    expect(server).toMatch(/^\d+$/);
    process.kill(Number(server), 'SIGKILL');
    await waitFor('the worker to stop', () => Promise.resolve(!worker.isRunning), 20_000);
    expect(await worker.exit).not.toBe(0);
  });

  it('takes its llama-server down with it when the worker is killed outright (SIGKILL)', async () => {
    const worker = stack.workers[1];
    const server = Number(
      execFileSync('pgrep', ['-P', String(worker.pid), '-f', 'llama-server'], { encoding: 'utf8' })
        .trim()
        .split('\n')[0],
    );
    expect(server).toBeGreaterThan(0);
    await worker.stop('SIGKILL');
    const alive = (): boolean => {
      try {
        process.kill(server, 0);
        return true;
      } catch {
        return false;
      }
    };
    await waitFor('the orphaned llama-server to end', () => Promise.resolve(!alive()), 10_000);
  });
});
