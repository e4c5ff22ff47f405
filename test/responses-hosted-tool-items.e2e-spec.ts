import OpenAI from 'openai';
import { assertMatchesResponsesSchema } from './support/openai-responses-schema';
import { e2eStack } from './support/stack-env';

/**
 * A conversation that used tools never offered here (Codex's `local_shell`, OpenAI's hosted
 * `tool_search`) goes on on the real llama worker: the replayed calls and their outputs are
 * accepted, the model answers after them, and `input_items` lists them back as they were sent
 * (ids given, or made). An output that answers no call is a 400 naming it.
 */
describe('Responses: replayed hosted-tool items', () => {
  const stack = e2eStack();
  const [baseURL] = stack.apiUrls;
  const client = new OpenAI({ baseURL, apiKey: stack.apiKey, maxRetries: 0 });

  const shellCall = {
    type: 'local_shell_call',
    id: 'lsh_replayed',
    call_id: 'call_shell_1',
    action: { type: 'exec', command: ['ls', '-la'], env: {}, timeout_ms: 1000 },
    status: 'completed',
  };
  const shellOutput = { type: 'local_shell_call_output', id: 'call_shell_1', call_id: 'call_shell_1', output: '{"output":"README.md\\n"}' };
  const search = { type: 'tool_search_call', call_id: null, execution: 'server', arguments: { query: 'weather' }, status: 'completed' };

  it('answers after replayed shell and tool-search items, and lists them back', async () => {
    const input = [{ role: 'user', content: 'What is in this folder?' }, shellCall, shellOutput, search] as unknown as OpenAI.Responses.ResponseInput;
    const response = await client.responses.create({ model: stack.model, input, max_output_tokens: 20 });
    assertMatchesResponsesSchema('Response', response);
    expect(response.status).toMatch(/completed|incomplete/);
    expect(response.usage?.output_tokens).toBeGreaterThan(0);

    const listed = await client.responses.inputItems.list(response.id, { order: 'asc' });
    const items = listed.data as unknown as Array<Record<string, unknown>>;
    expect(items.map((item) => item.type)).toEqual(['message', 'local_shell_call', 'local_shell_call_output', 'tool_search_call']);
    expect(items[1]).toEqual(shellCall);
    expect(items[2]).toEqual({ ...shellOutput, status: 'completed' });
    // No id and no call_id sent: the item gets an id, which answers for its call.
    expect(items[3]).toMatchObject({ ...search, call_id: expect.stringMatching(/^tsc_/) as unknown, id: expect.stringMatching(/^tsc_/) as unknown });
  });

  it('refuses a shell output that answers no call, naming its call_id', async () => {
    const input = [
      { role: 'user', content: 'Hi' },
      { ...shellOutput, call_id: 'call_nobody_made' },
    ] as unknown as OpenAI.Responses.ResponseInput;
    const refused = await client.responses.create({ model: stack.model, input, max_output_tokens: 16 }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('input[1].call_id');
  });
});
