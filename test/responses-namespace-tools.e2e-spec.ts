import OpenAI from 'openai';
import { assertMatchesResponsesSchema } from './support/openai-responses-schema';
import { expectWellFormedStream, streamResponseEvents } from './support/response-events';
import { e2eStack } from './support/stack-env';

/** An MCP server's tools as Codex sends them: one `namespace` tool holding its functions. */
const NAMESPACE = {
  type: 'namespace',
  name: 'mcp__weather',
  description: 'The weather MCP server',
  tools: [
    {
      type: 'function',
      name: 'get_weather',
      description: 'The weather in a city',
      strict: false,
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
    },
  ],
};

/**
 * Codex's `namespace` tools on the real llama worker: the model is offered the members, and a call
 * comes back with the member's own name and its `namespace`, streamed and final, as Codex expects
 * (a flattened name it would refuse as an unsupported call); replayed with its namespace, the
 * call and its output continue the conversation.
 */
describe('Responses: namespace tools', () => {
  const stack = e2eStack();
  const [baseURL] = stack.apiUrls;
  const client = new OpenAI({ baseURL, apiKey: stack.apiKey, maxRetries: 0 });
  // The openai package at this version declares no namespace tool: sent as Codex sends it.
  const tools = [NAMESPACE, { type: 'web_search' }] as unknown as OpenAI.Responses.Tool[];

  it('answers a forced call with the member and its namespace, and takes the call back as input', async () => {
    const first = await client.responses.create({
      model: stack.model,
      input: 'What is the weather in Paris?',
      tools,
      tool_choice: 'required',
      max_output_tokens: 100,
    });
    assertMatchesResponsesSchema('Response', first);
    const call = first.output.find((item) => item.type === 'function_call');
    expect(call).toMatchObject({ type: 'function_call', name: 'get_weather', namespace: 'mcp__weather', status: 'completed' });
    expect(first.tools).toEqual([{ ...NAMESPACE, tools: [{ ...NAMESPACE.tools[0] }] }]);
    if (call?.type !== 'function_call') throw new Error('no call');

    const next = await client.responses.create({
      model: stack.model,
      tools,
      max_output_tokens: 30,
      input: [
        { role: 'user', content: 'What is the weather in Paris?' },
        {
          type: 'function_call',
          call_id: call.call_id,
          name: call.name,
          namespace: 'mcp__weather',
          arguments: call.arguments,
        },
        { type: 'function_call_output', call_id: call.call_id, output: '{"sky":"clear"}' },
      ],
    });
    assertMatchesResponsesSchema('Response', next);
    expect(['completed', 'incomplete']).toContain(next.status);
  });

  it('streams the call with its namespace on output_item.added and .done', async () => {
    const { status, events } = await streamResponseEvents(baseURL, stack.apiKey, {
      model: stack.model,
      input: 'What is the weather in Paris?',
      tools,
      tool_choice: 'required',
      max_output_tokens: 100,
      stream: true,
    });
    expect(status).toBe(200);
    expectWellFormedStream(events);
    const items = events.filter((event) => event.event.startsWith('response.output_item.')).map((event) => event.data.item as Record<string, unknown>);
    expect(items.length).toBeGreaterThanOrEqual(2);
    for (const item of items) expect(item).toMatchObject({ type: 'function_call', name: 'get_weather', namespace: 'mcp__weather' });
    const done = events.find((event) => event.event === 'response.function_call_arguments.done');
    expect(done?.data).toMatchObject({ name: 'get_weather' });
  });
});
