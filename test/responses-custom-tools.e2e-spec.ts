import OpenAI from 'openai';
import { assertMatchesResponsesSchema } from './support/openai-responses-schema';
import { expectWellFormedStream, streamResponseEvents } from './support/response-events';
import { e2eStack } from './support/stack-env';

/** A custom tool whose input must be a date, enforced by its regex on the real llama worker. */
const DATE_TOOL: OpenAI.Responses.CustomTool = {
  type: 'custom',
  name: 'set_date',
  description: 'Sets the date.',
  format: { type: 'grammar', syntax: 'regex', definition: '20[0-9]{2}-(0[1-9]|1[0-2])-[0-3][0-9]' },
};
const WHOLE_DATE = /^20[0-9]{2}-(0[1-9]|1[0-2])-[0-3][0-9]$/;

/** Codex's apply_patch as it sends it: a custom tool with a Lark grammar, taken as free text here. */
const APPLY_PATCH: OpenAI.Responses.CustomTool = {
  type: 'custom',
  name: 'apply_patch',
  description: 'Use the `apply_patch` tool to edit files.',
  format: { type: 'grammar', syntax: 'lark', definition: 'start: begin_patch hunk+ end_patch\nbegin_patch: "*** Begin Patch" LF' },
};

/**
 * Custom tools on the real llama worker (tiny-chat): forced by `tool_choice`, the call is a
 * `custom_tool_call` whose input the regex grammar held to the whole pattern, streamed as
 * `custom_tool_call_input` events whose deltas make the final input; a replayed call and its
 * output continue the conversation; every object and event matches OpenAI's schema.
 */
describe('Responses: custom tools', () => {
  const stack = e2eStack();
  const [baseURL] = stack.apiUrls;
  const client = new OpenAI({ baseURL, apiKey: stack.apiKey, maxRetries: 0 });

  it('answers a forced call with an input that matches the whole regex, and takes it back as input', async () => {
    const first = await client.responses.create({
      model: stack.model,
      input: 'Set the date to the first of May.',
      tools: [DATE_TOOL, APPLY_PATCH],
      tool_choice: { type: 'custom', name: 'set_date' },
      max_output_tokens: 100,
    });
    assertMatchesResponsesSchema('Response', first);
    const call = first.output.find((item) => item.type === 'custom_tool_call');
    if (call?.type !== 'custom_tool_call') throw new Error(`no custom call in ${JSON.stringify(first.output)}`);
    expect(call).toMatchObject({ name: 'set_date', id: expect.stringMatching(/^ctc_/) as string });
    expect(call.input).toMatch(WHOLE_DATE);
    expect(first.tools).toEqual([DATE_TOOL, APPLY_PATCH]);

    const next = await client.responses.create({
      model: stack.model,
      tools: [DATE_TOOL],
      max_output_tokens: 30,
      input: [
        { role: 'user', content: 'Set the date to the first of May.' },
        { type: 'custom_tool_call', call_id: call.call_id, name: call.name, input: call.input },
        { type: 'custom_tool_call_output', call_id: call.call_id, output: 'done' },
      ],
    });
    assertMatchesResponsesSchema('Response', next);
    expect(['completed', 'incomplete']).toContain(next.status);
    // The output of a call never made is refused, naming its call_id.
    await expect(
      client.responses.create({
        model: stack.model,
        input: [
          { role: 'user', content: 'q' },
          { type: 'custom_tool_call_output', call_id: 'call_nowhere', output: 'done' },
        ],
      }),
    ).rejects.toMatchObject({ status: 400, param: 'input[1].call_id' });
  });

  it('streams the call as custom_tool_call_input deltas that make its input', async () => {
    const { status, events } = await streamResponseEvents(baseURL, stack.apiKey, {
      model: stack.model,
      input: 'Set the date.',
      tools: [DATE_TOOL],
      tool_choice: { type: 'custom', name: 'set_date' },
      max_output_tokens: 100,
      stream: true,
    });
    expect(status).toBe(200);
    expectWellFormedStream(events);
    const deltas = events.filter((event) => event.event === 'response.custom_tool_call_input.delta').map((event) => event.data.delta as string);
    const done = events.find((event) => event.event === 'response.custom_tool_call_input.done');
    const item = events.find((event) => event.event === 'response.output_item.done')?.data.item as { type: string; input: string };
    expect(deltas.length).toBeGreaterThan(0);
    expect(deltas.join('')).toBe(done?.data.input);
    expect(item).toMatchObject({ type: 'custom_tool_call', name: 'set_date', input: done?.data.input });
    expect(item.input).toMatch(WHOLE_DATE);
  });

  it('refuses a regex the grammar cannot express, naming its definition', async () => {
    await expect(
      client.responses.create({
        model: stack.model,
        input: 'q',
        tools: [{ type: 'custom', name: 'look', format: { type: 'grammar', syntax: 'regex', definition: 'a(?=b)' } }],
      }),
    ).rejects.toMatchObject({ status: 400, param: 'tools[0].format.definition' });
  });
});
