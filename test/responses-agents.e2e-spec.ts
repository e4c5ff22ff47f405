import { createOpenAI } from '@ai-sdk/openai';
import { Agent, run, setDefaultOpenAIClient, setTracingDisabled, tool as agentTool } from '@openai/agents';
import { Output, generateText, isStepCount, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { z } from 'zod';
import { e2eStack } from './support/stack-env';

const weatherInput = z.object({ city: z.string() });

/**
 * Agent frameworks that speak only the Responses API, pointed at base_url and otherwise unchanged,
 * against the real llama worker. The generated model calls a tool when `tool_choice` requires it;
 * after the tool has run, each framework sends the whole conversation back (the AI SDK as an
 * `item_reference` to the stored call, the Agents SDK as the call item itself).
 */
describe('agent frameworks on the Responses API', () => {
  const stack = e2eStack();
  const [baseURL] = stack.apiUrls;

  describe("AI SDK's @ai-sdk/openai provider (openai(model) calls /v1/responses)", () => {
    const openai = createOpenAI({ baseURL, apiKey: stack.apiKey });
    const model = openai(stack.model);
    const client = new OpenAI({ baseURL, apiKey: stack.apiKey, maxRetries: 0 });

    it('runs a zod tool over two turns with generateText', async () => {
      const calls: string[] = [];
      const result = await generateText({
        model,
        system: 'You report the weather.',
        prompt: 'What is the weather in Paris?',
        tools: {
          weather: tool({
            description: 'The weather in a city',
            inputSchema: weatherInput,
            execute: ({ city }) => {
              calls.push(city);
              return Promise.resolve({ city, sky: 'clear' });
            },
          }),
        },
        toolChoice: 'required',
        // One call, as the assertions expect: with parallel calls allowed, 'required' may make several.
        providerOptions: { openai: { parallelToolCalls: false } },
        prepareStep: ({ stepNumber }) => (stepNumber > 0 ? { toolChoice: 'none' } : undefined),
        stopWhen: isStepCount(2),
        maxOutputTokens: 60,
        maxRetries: 0,
      });
      expect(calls).toHaveLength(1);
      expect(result.steps).toHaveLength(2);
      expect(result.steps[0].finishReason).toBe('tool-calls');
      expect(result.steps[1].text).toMatch(/[a-z]{2,}/);
      // The second turn sent the stored call back as an item_reference; its input items show it resolved.
      const items = await client.responses.inputItems.list(result.steps[1].response.id, { order: 'asc' });
      expect(items.data.map((item) => item.type)).toEqual(['message', 'message', 'function_call', 'function_call_output']);
      expect(items.data[2]).toMatchObject({ name: 'weather', call_id: result.steps[0].toolCalls[0].toolCallId });
    });

    it('streams a zod tool over two turns with streamText', async () => {
      let executed = 0;
      const result = streamText({
        model,
        prompt: 'Weather in Oslo?',
        tools: { weather: tool({ inputSchema: weatherInput, execute: ({ city }) => Promise.resolve(`${city}: rain`).finally(() => executed++) }) },
        providerOptions: { openai: { parallelToolCalls: false } },
        prepareStep: ({ stepNumber }) => ({ toolChoice: stepNumber === 0 ? 'required' : 'none' }),
        stopWhen: isStepCount(2),
        maxOutputTokens: 60,
        maxRetries: 0,
      });
      let text = '';
      const errors: unknown[] = [];
      for await (const part of result.fullStream) {
        if (part.type === 'text-delta') text += part.text;
        if (part.type === 'error') errors.push(part.error);
      }
      expect(errors).toEqual([]);
      expect(executed).toBe(1);
      expect((await result.steps).map((step) => step.finishReason)).toEqual(['tool-calls', expect.stringMatching(/^(stop|length)$/)]);
      expect(text).toBe((await result.steps)[1].text);
      expect(text).toMatch(/[a-z]{2,}/);
    });

    it('produces structured output that satisfies a zod schema', async () => {
      const Book = z.object({ title: z.string(), pages: z.number().int(), tags: z.array(z.string()) });
      const result = await generateText({ model, prompt: 'Describe a book.', output: Output.object({ schema: Book }), maxOutputTokens: 300, maxRetries: 0 });
      expect(Book.parse(result.output)).toEqual(result.output);
    });
  });

  describe('OpenAI Agents SDK (@openai/agents)', () => {
    it('runs an agent with one function tool to a final output', async () => {
      setTracingDisabled(true); // tracing would export to OpenAI's servers
      setDefaultOpenAIClient(new OpenAI({ baseURL, apiKey: stack.apiKey, maxRetries: 0 }));
      const cities: string[] = [];
      const weather = agentTool({
        name: 'get_weather',
        description: 'The weather in a city',
        parameters: weatherInput,
        execute: ({ city }) => {
          cities.push(city);
          return `The sky over ${city} is clear.`;
        },
      });
      // The SDK drops tool_choice once a tool has run (resetToolChoice), so the second turn answers.
      // It takes an incomplete response for a failed run: the answer must end by itself, which
      // greedy decoding of the generated model never does; sampled, it ends within a few dozen words.
      const agent = new Agent({
        name: 'Forecaster',
        instructions: 'Answer with the weather.',
        model: stack.model,
        tools: [weather],
        modelSettings: { toolChoice: 'required', parallelToolCalls: false, maxTokens: 2000 },
      });
      const result = await run(agent, 'What is the weather in Lisbon?', { maxTurns: 4 });
      expect(cities).toHaveLength(1);
      expect(typeof result.finalOutput).toBe('string');
      expect(result.finalOutput).toMatch(/[a-z]{2,}/);
      expect(result.newItems.map((item) => item.type)).toEqual(['tool_call_item', 'tool_call_output_item', 'message_output_item']);
    });
  });
});
