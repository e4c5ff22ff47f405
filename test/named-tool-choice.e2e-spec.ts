import Ajv from 'ajv';
import OpenAI from 'openai';
import { assertMatchesSchema } from './support/openai-schema';
import { ServiceStack, STACK_API_KEY } from './support/service-stack';
import { e2eStack } from './support/stack-env';

/**
 * A named `tool_choice` through the official client against the real llama.cpp worker: OpenAI
 * answers it with exactly one call of that function, whatever `parallel_tool_calls` says. (The
 * engine used to let the model go on calling, up to eight times, often until max_tokens cut the
 * last call; seeded runs repeat a call because the seeded sampler restarts after each one.)
 */
describe('a named tool choice', () => {
  const stack = e2eStack();
  const client = new OpenAI({ baseURL: stack.apiUrls[0], apiKey: stack.apiKey, maxRetries: 0 });
  const ajv = new Ajv({ strict: false });
  const parameters = {
    type: 'object',
    properties: { city: { type: 'string' }, days: { type: 'integer' } },
    required: ['city', 'days'],
    additionalProperties: false,
  };
  const valid = ajv.compile(parameters);
  const tools: OpenAI.ChatCompletionFunctionTool[] = [
    { type: 'function', function: { name: 'get_weather', description: 'Weather for a city', parameters } },
    {
      type: 'function',
      function: { name: 'get_time', description: 'Time in a zone', parameters: { type: 'object', properties: { zone: { enum: ['utc', 'cet'] } } } },
    },
  ];
  const request = {
    model: stack.model,
    messages: [{ role: 'user' as const, content: 'What is the weather in Paris?' }],
    tools,
    tool_choice: { type: 'function' as const, function: { name: 'get_weather' } },
    max_tokens: 200,
  };
  const seeds = [1, 2, 3, 4, 5, 6];

  it.each([true, undefined])('answers with exactly one call of that function (parallel_tool_calls %s), seeds 1-6', async (parallel) => {
    for (const seed of seeds) {
      const completion = await client.chat.completions.create({ ...request, seed, ...(parallel === undefined ? {} : { parallel_tool_calls: parallel }) });
      assertMatchesSchema('CreateChatCompletionResponse', completion);
      const [choice] = completion.choices;
      expect({ seed, finish: choice.finish_reason, calls: choice.message.tool_calls?.length }).toEqual({ seed, finish: 'tool_calls', calls: 1 });
      const [call] = choice.message.tool_calls ?? [];
      if (call?.type !== 'function') throw new Error('expected a function call');
      expect(call.function.name).toBe('get_weather');
      expect(valid(JSON.parse(call.function.arguments))).toBe(true);
      expect(choice.message.content).toBeNull();
    }
  });

  it('streams exactly one call: one opening fragment with index 0, then finish_reason tool_calls', async () => {
    for (const seed of seeds) {
      const stream = await client.chat.completions.create({ ...request, seed, stream: true, parallel_tool_calls: true });
      const fragments: OpenAI.ChatCompletionChunk.Choice.Delta.ToolCall[] = [];
      let finish: string | null = null;
      for await (const chunk of stream) {
        assertMatchesSchema('CreateChatCompletionStreamResponse', chunk);
        fragments.push(...(chunk.choices[0]?.delta.tool_calls ?? []));
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      expect({
        seed,
        finish,
        indexes: [...new Set(fragments.map((fragment) => fragment.index))],
        opened: fragments.filter((fragment) => fragment.id !== undefined).length,
      }).toEqual({
        seed,
        finish: 'tool_calls',
        indexes: [0],
        opened: 1,
      });
      expect(fragments[0].function?.name).toBe('get_weather');
      expect(valid(JSON.parse(fragments.map((fragment) => fragment.function?.arguments ?? '').join('')))).toBe(true);
    }
  });

  it('still lets tool_choice "required" make parallel calls when they are on (the bound is for a named choice only)', async () => {
    // tiny-chat ends its turn after a call; tiny-fables is made to go on calling now and then
    // (`--parallel-calls`, one call in ten), so one of the first 40 seeds does (which one depends
    // on the engine's sampler).
    const fables = await ServiceStack.start({ name: 'parallel-calls', workers: 0, models: ['tiny-fables'] });
    try {
      await fables.addWorker({}, 'tiny-fables');
      const parallelClient = new OpenAI({ baseURL: fables.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
      const counts: number[] = [];
      for (let seed = 1; seed <= 40 && Math.max(0, ...counts) < 2; seed++) {
        const completion = await parallelClient.chat.completions.create({ ...request, model: 'tiny-fables', tool_choice: 'required', seed });
        counts.push(completion.choices[0].message.tool_calls?.length ?? 0);
      }
      expect(counts.every((count) => count >= 1)).toBe(true);
      expect(Math.max(...counts)).toBeGreaterThan(1);
    } finally {
      await fables.stop();
    }
  }, 120_000);
});
