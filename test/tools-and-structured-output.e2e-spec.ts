import { WORKER_REGISTRY_KEYS, parseWorkerAnnouncement } from '@app/contracts';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { ChatOpenAI } from '@langchain/openai';
import { Output, generateText, jsonSchema, streamText, tool } from 'ai';
import Ajv from 'ajv';
import { Redis } from 'ioredis';
import type { LlamaModel } from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import OpenAI from 'openai';
import { zodFunction, zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { assertMatchesSchema } from './support/openai-schema';
import { e2eStack } from './support/stack-env';

/**
 * Tool calling and structured output through the newest clients, unchanged, against the real
 * llama.cpp worker on the project's own model: every call's arguments and every structured
 * answer must satisfy its schema because a grammar enforced it.
 */
describe('tools and structured output', () => {
  const stack = e2eStack();
  const [baseURL] = stack.apiUrls;
  const client = new OpenAI({ baseURL, apiKey: stack.apiKey, maxRetries: 0 });
  const model = stack.model;
  const ajv = new Ajv({ strict: false });

  const weatherParameters = {
    type: 'object',
    properties: { city: { type: 'string' }, days: { type: 'integer' }, unit: { enum: ['celsius', 'fahrenheit'] } },
    required: ['city', 'days', 'unit'],
    additionalProperties: false,
  };
  const weatherTool: OpenAI.ChatCompletionFunctionTool = {
    type: 'function',
    function: { name: 'get_weather', description: 'Weather for a city', parameters: weatherParameters },
  };
  const question: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is the weather in Paris?' }];
  const validWeather = ajv.compile(weatherParameters);

  describe('openai', () => {
    it('answers tool_choice "required" with a call whose arguments satisfy the schema', async () => {
      const completion = await client.chat.completions.create({ model, messages: question, tools: [weatherTool], tool_choice: 'required', seed: 1 });
      assertMatchesSchema('CreateChatCompletionResponse', completion);
      const [choice] = completion.choices;
      expect(choice.finish_reason).toBe('tool_calls');
      expect(choice.message.content).toBeNull();
      const call = choice.message.tool_calls?.[0];
      if (call?.type !== 'function') throw new Error('expected a function call');
      expect(call.id).toMatch(/^call_/);
      expect(call.function.name).toBe('get_weather');
      expect(validWeather(JSON.parse(call.function.arguments))).toBe(true);
      // JSON and nothing after it, as OpenAI's calls are (the grammar would allow padding).
      expect(call.function.arguments).toMatch(/}$/);
    });

    it('streams a named call: id, type and name first, then the arguments in pieces, then finish_reason tool_calls', async () => {
      const stream = await client.chat.completions.create({
        model,
        messages: question,
        tools: [weatherTool],
        tool_choice: { type: 'function', function: { name: 'get_weather' } },
        stream: true,
        seed: 2,
      });
      const fragments: OpenAI.ChatCompletionChunk.Choice.Delta.ToolCall[] = [];
      const chunks: OpenAI.ChatCompletionChunk[] = [];
      for await (const chunk of stream) {
        assertMatchesSchema('CreateChatCompletionStreamResponse', chunk);
        chunks.push(chunk);
        fragments.push(...(chunk.choices[0]?.delta.tool_calls ?? []));
      }
      expect(fragments[0]).toMatchObject({ index: 0, id: expect.stringMatching(/^call_/) as string, type: 'function', function: { name: 'get_weather' } });
      expect(fragments.slice(1).every((fragment) => fragment.id === undefined && fragment.function?.name === undefined)).toBe(true);
      expect(fragments.length).toBeGreaterThan(2);
      const args = fragments.map((fragment) => fragment.function?.arguments ?? '').join('');
      expect(validWeather(JSON.parse(args))).toBe(true);
      expect(args).toMatch(/}$/);
      expect(chunks.at(-1)?.choices[0].finish_reason).toBe('tool_calls');
    });

    it('runs a tool with runTools, whose loop sends the call and its result back in the next request', async () => {
      const seen: unknown[] = [];
      // `required` makes every answer a call: the runner calls the tool, asks again with the
      // result, calls again, and stops at its limit of two requests.
      const runner = client.chat.completions.runTools(
        {
          model,
          messages: question,
          seed: 3,
          tool_choice: 'required',
          tools: [
            zodFunction({
              name: 'get_weather',
              parameters: z.object({ city: z.string(), days: z.number().int() }),
              function: (args: { city: string; days: number }) => {
                seen.push(args);
                return { forecast: 'sunny' };
              },
            }),
          ],
        },
        { maxChatCompletions: 2 },
      );
      await runner.done();
      expect(seen).toHaveLength(2);
      for (const args of seen) expect(args).toEqual({ city: expect.any(String) as string, days: expect.any(Number) as number });
      const results = runner.messages.filter((message) => message.role === 'tool');
      expect(results.map((message) => message.content)).toEqual(['{"forecast":"sunny"}', '{"forecast":"sunny"}']);
      // The second request carried the first call and its result: its prompt is longer.
      const [first, second] = runner.allChatCompletions();
      expect(second.usage!.prompt_tokens).toBeGreaterThan(first.usage!.prompt_tokens);
    });

    it('continues a conversation that carries a call and its result', async () => {
      const first = await client.chat.completions.create({ model, messages: question, tools: [weatherTool], tool_choice: 'required', seed: 4 });
      const call = first.choices[0].message.tool_calls?.[0];
      if (!call) throw new Error('expected a call');
      const answer = await client.chat.completions.create({
        model,
        tools: [weatherTool],
        max_tokens: 20,
        seed: 4,
        messages: [...question, first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: '{"forecast": "sunny"}' }],
      });
      assertMatchesSchema('CreateChatCompletionResponse', answer);
      expect(answer.choices[0].message.role).toBe('assistant');
      // The call and its result are in the prompt: more tokens than the question alone, same tools.
      const alone = await client.chat.completions.create({ model, tools: [weatherTool], max_tokens: 1, messages: question });
      expect(answer.usage!.prompt_tokens).toBeGreaterThan(alone.usage!.prompt_tokens);
    });

    it('parses a zod response_format: the answer is JSON that satisfies the schema', async () => {
      const Person = z.object({ name: z.string(), age: z.number().int(), colour: z.enum(['red', 'green']), tags: z.array(z.string()) });
      for (const seed of [1, 2, 3]) {
        const completion = await client.chat.completions.parse({ model, messages: question, seed, response_format: zodResponseFormat(Person, 'person') });
        const parsed = completion.choices[0].message.parsed;
        expect(Person.safeParse(parsed).success).toBe(true);
      }
    });

    it('accepts, and ignores, the harmless fields clients send', async () => {
      const completion = await client.chat.completions.create({
        model,
        messages: question,
        max_tokens: 5,
        // Greedy, so the answer (and its finish reason) is the same on every run.
        temperature: 0,
        metadata: { team: 'search' },
        store: false,
        service_tier: 'auto',
        prompt_cache_key: 'k1',
        safety_identifier: 'user-1',
        user: 'user-1',
        verbosity: 'low',
        reasoning_effort: 'low',
        modalities: ['text'],
        parallel_tool_calls: false,
      });
      assertMatchesSchema('CreateChatCompletionResponse', completion);
      expect(completion.choices[0].finish_reason).toBe('length');
    });

    /** Runs `use` with the model's vocabulary (its tokenizer, no weights), disposed afterwards. */
    async function withVocabulary<T>(use: (vocabulary: LlamaModel) => Promise<T> | T): Promise<T> {
      const { getLlama } = await import('node-llama-cpp');
      const llama = await getLlama({ gpu: false, build: 'never' });
      const vocabulary = await llama.loadModel({ modelPath: stack.modelPath, vocabOnly: true });
      try {
        return await use(vocabulary);
      } finally {
        await vocabulary.dispose();
        await llama.dispose();
      }
    }

    it('applies logit_bias: +100 makes one token the whole answer, -100 bans it', async () => {
      const pieces = async (logitBias: Record<string, number>) => {
        const stream = await client.chat.completions.create({ model, messages: question, max_tokens: 6, temperature: 0, logit_bias: logitBias, stream: true });
        const found: string[] = [];
        for await (const chunk of stream) found.push(chunk.choices[0]?.delta.content ?? '');
        return found.join('');
      };
      const forced = await pieces({ '300': 100 });
      const token = forced.slice(0, forced.length / 6);
      expect(token.length).toBeGreaterThan(0);
      expect(forced).toBe(token.repeat(6));
      // Greedy decoding starts with one known token; banning it must change the start.
      const greedy = await pieces({});
      const [first, firstText] = await withVocabulary((vocabulary) => {
        const [token] = vocabulary.tokenize(greedy);
        return [token, vocabulary.detokenize([token])] as const;
      });
      expect(greedy.startsWith(firstText)).toBe(true);
      expect((await pieces({ [String(first)]: -100 })).startsWith(firstText)).toBe(false);
    });

    it('refuses a logit_bias on an end-of-generation token, which llama.cpp would skip', async () => {
      const endOfTurn = await withVocabulary((vocabulary) => vocabulary.tokens.eos);
      expect(endOfTurn).not.toBeNull();
      const logitBias = { [String(endOfTurn)]: -100 };
      const refused = await client.chat.completions
        .create({ model, messages: question, max_tokens: 4, logit_bias: logitBias })
        .catch((caught: unknown) => caught);
      expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
      expect(refused).toMatchObject({ param: 'logit_bias', code: 'unsupported_parameter' });
      // Refused at admission, before it is queued: every worker announces the token as one it cannot bias.
      const redis = new Redis(stack.redisUrl);
      try {
        const announcements = Object.values(await redis.hgetall(WORKER_REGISTRY_KEYS.announcements)).map((entry) => parseWorkerAnnouncement(entry));
        const ofModel = announcements.filter((announcement) => announcement?.model === model);
        expect(ofModel.length).toBeGreaterThan(0);
        for (const announcement of ofModel) expect(announcement?.capabilities.unbiasableTokens).toContain(endOfTurn);
      } finally {
        redis.disconnect();
      }
    });

    it('answers n choices, each with its index and finish reason, usage summed', async () => {
      const completion = await client.chat.completions.create({ model, messages: question, n: 3, max_tokens: 12, seed: 9 });
      assertMatchesSchema('CreateChatCompletionResponse', completion);
      expect(completion.choices.map((choice) => choice.index)).toEqual([0, 1, 2]);
      const reasons = completion.choices.map((choice) => choice.finish_reason);
      expect(reasons.every((reason) => reason === 'length' || reason === 'stop')).toBe(true);
      expect(new Set(completion.choices.map((choice) => choice.message.content)).size).toBeGreaterThan(1);
      // Prompt counted once, answers summed: each choice cut at max_tokens adds its 12.
      const cut = reasons.filter((reason) => reason === 'length').length;
      expect(completion.usage?.completion_tokens).toBeGreaterThanOrEqual(12 * cut + (3 - cut));
      expect(completion.usage?.completion_tokens).toBeLessThanOrEqual(36);
      // The same request streamed: the same three answers, chunk by chunk per index.
      const stream = await client.chat.completions.create({ model, messages: question, n: 3, max_tokens: 12, seed: 9, stream: true });
      const texts = ['', '', ''];
      const finishes: Array<string | null> = [null, null, null];
      for await (const chunk of stream) {
        assertMatchesSchema('CreateChatCompletionStreamResponse', chunk);
        for (const choice of chunk.choices) {
          texts[choice.index] += choice.delta.content ?? '';
          finishes[choice.index] ??= choice.finish_reason;
        }
      }
      expect(texts).toEqual(completion.choices.map((choice) => choice.message.content));
      expect(finishes).toEqual(reasons);
    });

    it('answers json_object with a JSON object, streamed too', async () => {
      const stream = await client.chat.completions.create({ model, messages: question, response_format: { type: 'json_object' }, stream: true, seed: 5 });
      let content = '';
      for await (const chunk of stream) content += chunk.choices[0]?.delta.content ?? '';
      const parsed: unknown = JSON.parse(content);
      expect(typeof parsed).toBe('object');
      expect(Array.isArray(parsed)).toBe(false);
    });
  });

  describe('Vercel AI SDK', () => {
    const provider = createOpenAICompatible({ name: 'queued', baseURL, apiKey: stack.apiKey, supportsStructuredOutputs: true });
    const sdkModel = provider(model);
    const weather = tool({
      description: 'Weather for a city',
      inputSchema: jsonSchema<{ city: string; days: number; unit: string }>(weatherParameters as never),
    });

    it('generates tool calls with toolChoice required', async () => {
      const result = await generateText({ model: sdkModel, prompt: 'Weather in Paris?', tools: { weather }, toolChoice: 'required', seed: 1, maxRetries: 0 });
      // Parallel calls are allowed by default; the tiny model may well repeat one.
      expect(result.toolCalls.length).toBeGreaterThanOrEqual(1);
      expect(result.finishReason).toBe('tool-calls');
      for (const call of result.toolCalls) {
        expect(call.toolName).toBe('weather');
        expect(validWeather(call.input)).toBe(true);
      }
    });

    it('streams a call to the named tool', async () => {
      const result = streamText({
        model: sdkModel,
        prompt: 'Weather in Paris?',
        tools: { weather },
        toolChoice: { type: 'tool', toolName: 'weather' },
        seed: 2,
        maxRetries: 0,
      });
      const calls = await result.toolCalls;
      expect(calls).toHaveLength(1);
      expect(validWeather(calls[0].input)).toBe(true);
    });

    it('generates an object with Output.object', async () => {
      const schema = z.object({ title: z.string(), rating: z.number().int(), done: z.boolean() });
      const result = await generateText({ model: sdkModel, prompt: 'Describe a book.', output: Output.object({ schema }), seed: 3, maxRetries: 0 });
      expect(schema.safeParse(result.output).success).toBe(true);
    });
  });

  describe('LangChain ChatOpenAI', () => {
    const chat = new ChatOpenAI({ model, apiKey: stack.apiKey, configuration: { baseURL }, maxRetries: 0, temperature: 1 });
    const Answer = z.object({ answer: z.string(), confidence: z.number() });

    it('returns structured output with its default method', async () => {
      const result = await chat.withStructuredOutput(Answer).invoke('Is the rabbit quick?');
      expect(Answer.safeParse(result).success).toBe(true);
    });

    it('returns structured output with method jsonSchema', async () => {
      const result = await chat.withStructuredOutput(Answer, { method: 'jsonSchema' }).invoke('Is the rabbit quick?');
      expect(Answer.safeParse(result).success).toBe(true);
    });

    it('calls a bound tool once when parallel calls are off', async () => {
      const bound = chat.bindTools([weatherTool], { tool_choice: 'any', parallel_tool_calls: false });
      const message = await bound.invoke('Weather in Paris?');
      expect(message.tool_calls).toHaveLength(1);
      expect(message.tool_calls?.[0].name).toBe('get_weather');
      expect(validWeather(message.tool_calls?.[0].args)).toBe(true);
    });

    it('calls a bound tool one or more times when parallel calls are on, each call schema-valid', async () => {
      // No seed: LangChain sends none, so the API draws one and the number of calls varies.
      const bound = chat.bindTools([weatherTool], { tool_choice: 'any' });
      const message = await bound.invoke('Weather in Paris?');
      const calls = message.tool_calls ?? [];
      expect(calls.length).toBeGreaterThanOrEqual(1);
      expect(calls.length).toBeLessThanOrEqual(8);
      expect(new Set(calls.map((call) => call.id)).size).toBe(calls.length);
      for (const call of calls) {
        expect(call.name).toBe('get_weather');
        expect(validWeather(call.args)).toBe(true);
      }
    });
  });
});
