import Ajv from 'ajv';
import OpenAI from 'openai';
import { e2eStack } from './support/stack-env';

/**
 * A forced tool call on the tiny model completes, whatever the seed: the call's arguments close and
 * the turn ends after it, well within 100 tokens, so that the first run and every test that forces
 * a call get a finished call (it used to go on with a repeat of the same call, about one seed in
 * ten, until max_tokens cut it).
 */
describe('a forced tool call on the tiny model', () => {
  const stack = e2eStack();
  const client = new OpenAI({ baseURL: stack.apiUrls[0], apiKey: stack.apiKey, maxRetries: 0 });
  const parameters = {
    type: 'object',
    properties: { city: { type: 'string' }, days: { type: 'integer' }, unit: { enum: ['celsius', 'fahrenheit'] } },
    required: ['city', 'days', 'unit'],
    additionalProperties: false,
  };
  const valid = new Ajv({ strict: false }).compile(parameters);
  const seeds = Array.from({ length: 50 }, (_, index) => index + 1);

  it('streams a finished call with tool_choice "required", 50 seeds, within 100 tokens', async () => {
    const unfinished: string[] = [];
    for (const seed of seeds) {
      const stream = await client.chat.completions.create({
        model: stack.model,
        messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
        tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather for a city', parameters } }],
        tool_choice: 'required',
        max_tokens: 100,
        seed,
        stream: true,
        stream_options: { include_usage: true },
      });
      const args = new Map<number, string>();
      let finish: string | null | undefined;
      for await (const chunk of stream) {
        for (const call of chunk.choices[0]?.delta.tool_calls ?? []) args.set(call.index, (args.get(call.index) ?? '') + (call.function?.arguments ?? ''));
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      const calls = [...args.values()].map((text) => JSON.parse(text) as unknown);
      if (finish !== 'tool_calls' || calls.length !== 1 || !valid(calls[0])) unfinished.push(`seed ${seed}: ${finish} ${[...args.values()].join(' | ')}`);
    }
    expect(unfinished).toEqual([]);
  }, 180_000);

  it('completes a Responses call with tool_choice "required" and max_output_tokens 100, 50 times', async () => {
    const incomplete: string[] = [];
    for (const attempt of seeds) {
      const response = await client.responses.create({
        model: stack.model,
        input: 'What is the weather in Paris?',
        tools: [{ type: 'function', name: 'get_weather', description: 'The weather in a city', parameters, strict: true }],
        tool_choice: 'required',
        max_output_tokens: 100,
      });
      const calls = response.output.filter((item) => item.type === 'function_call');
      const ok = response.status === 'completed' && calls.length === 1 && valid(JSON.parse(calls[0].arguments));
      if (!ok)
        incomplete.push(
          `attempt ${attempt}: ${response.status} ${JSON.stringify(response.incomplete_details)} ${calls.map((call) => call.arguments).join(' | ')}`,
        );
    }
    expect(incomplete).toEqual([]);
  }, 180_000);
});
