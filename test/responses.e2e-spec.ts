import OpenAI from 'openai';
import { zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { assertMatchesResponsesSchema } from './support/openai-responses-schema';
import { eventOutline, expectWellFormedStream, streamResponseEvents } from './support/response-events';
import { e2eStack } from './support/stack-env';

const WEATHER_TOOL = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'The weather in a city',
  strict: true,
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
};

/** A page of input items as the wire carries it (the client's page object holds the list's fields apart). */
function assertItemList(items: { data: Array<{ id?: string }>; has_more: boolean }): void {
  assertMatchesResponsesSchema('ResponseItemList', {
    object: 'list',
    data: items.data,
    has_more: items.has_more,
    first_id: items.data[0].id,
    last_id: items.data.at(-1)!.id,
  });
}

/** The Responses API through the official client and on the wire, against the real llama worker. */
describe('Responses API (POST /v1/responses)', () => {
  const stack = e2eStack();
  const [baseURL, otherURL] = stack.apiUrls;
  const client = new OpenAI({ baseURL, apiKey: stack.apiKey, maxRetries: 0 });
  const other = new OpenAI({ baseURL: otherURL, apiKey: stack.apiKey, maxRetries: 0 });

  it('answers responses.create with a completed Response and its usage', async () => {
    const response = await client.responses.create({
      model: stack.model,
      instructions: 'You are terse.',
      input: 'Tell me about the rabbit.',
      max_output_tokens: 400,
    });
    assertMatchesResponsesSchema('Response', response);
    expect(response.object).toBe('response');
    expect(response.id).toMatch(/^resp_/);
    expect(response.output_text).toMatch(/[a-z]{2,}/);
    expect(response.output).toHaveLength(1);
    expect(response.output[0]).toMatchObject({ type: 'message', role: 'assistant' });
    expect(['completed', 'incomplete']).toContain(response.status);
    expect(response.usage?.input_tokens).toBeGreaterThan(0);
    expect(response.usage?.output_tokens).toBeGreaterThan(0);
    expect(response.usage?.total_tokens).toBe(response.usage!.input_tokens + response.usage!.output_tokens);
    expect(response.usage?.input_tokens_details.cached_tokens).toBeGreaterThanOrEqual(0);
    expect(response.usage?.output_tokens_details.reasoning_tokens).toBe(0);
    expect(response.instructions).toBe('You are terse.');
  });

  it('ends as incomplete with reason max_output_tokens when the limit cuts the answer', async () => {
    const response = await client.responses.create({ model: stack.model, input: 'Tell me a long story.', max_output_tokens: 16, temperature: 0 });
    assertMatchesResponsesSchema('Response', response);
    expect(response.status).toBe('incomplete');
    expect(response.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(response.usage?.output_tokens).toBe(16);
    expect(response.output[0]).toMatchObject({ type: 'message', status: 'incomplete' });
  });

  it("streams OpenAI's events in OpenAI's order, each valid against the schema", async () => {
    const { status, raw, events } = await streamResponseEvents(baseURL, stack.apiKey, {
      model: stack.model,
      input: 'Once upon a time',
      max_output_tokens: 40,
      temperature: 0,
    });
    expect(status).toBe(200);
    expect(raw).not.toContain('[DONE]');
    expectWellFormedStream(events, 'response.incomplete');
    expect(eventOutline(events)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.incomplete',
    ]);
    const text = events
      .filter((event) => event.event === 'response.output_text.delta')
      .map((event) => event.data.delta as string)
      .join('');
    expect(events.find((event) => event.event === 'response.output_text.done')?.data.text).toBe(text);
    const final = events.at(-1)!.data.response as OpenAI.Responses.Response;
    expect(final.output[0]).toMatchObject({ content: [{ type: 'output_text', text }] });
    // Greedy decoding: the same request without streaming gives the same text.
    const plain = await client.responses.create({ model: stack.model, input: 'Once upon a time', max_output_tokens: 40, temperature: 0 });
    expect(plain.output_text).toBe(text);
  });

  it('streams through responses.create({stream: true}) and responses.stream().finalResponse()', async () => {
    const stream = await client.responses.create({ model: stack.model, input: 'Hello there.', max_output_tokens: 30, stream: true });
    let text = '';
    let final: OpenAI.Responses.Response | undefined;
    for await (const event of stream) {
      if (event.type === 'response.output_text.delta') text += event.delta;
      if (event.type === 'response.completed' || event.type === 'response.incomplete') final = event.response;
    }
    expect(text).toMatch(/[a-z]{2,}/);
    expect(final?.output_text ?? (final?.output[0] as { content: Array<{ text: string }> }).content[0].text).toBe(text);

    const helper = client.responses.stream({ model: stack.model, input: 'Tell me about the fox.', max_output_tokens: 30 });
    let deltas = '';
    helper.on('response.output_text.delta', (event) => (deltas += event.delta));
    const response = await helper.finalResponse();
    assertMatchesResponsesSchema('Response', response);
    expect(response.output_text).toBe(deltas);
  });

  it('parses structured output with responses.parse and zodTextFormat', async () => {
    const Animal = z.object({ name: z.string(), legs: z.number().int(), friendly: z.boolean() });
    const response = await client.responses.parse({
      model: stack.model,
      input: 'Describe an animal as JSON.',
      text: { format: zodTextFormat(Animal, 'animal') },
      max_output_tokens: 200,
    });
    assertMatchesResponsesSchema('Response', response);
    expect(response.status).toBe('completed');
    expect(Animal.parse(response.output_parsed)).toEqual(response.output_parsed);
    expect(response.text?.format).toMatchObject({ type: 'json_schema', name: 'animal', strict: true });
  });

  it('calls a function tool and continues from its output with previous_response_id on another instance', async () => {
    const first = await client.responses.create({
      model: stack.model,
      input: 'What is the weather in Paris?',
      tools: [WEATHER_TOOL],
      tool_choice: 'required',
      max_output_tokens: 200,
    });
    assertMatchesResponsesSchema('Response', first);
    const call = first.output.find((item) => item.type === 'function_call');
    if (call?.type !== 'function_call') throw new Error('no function call in the output');
    expect(call).toMatchObject({ type: 'function_call', name: 'get_weather', status: 'completed' });
    expect(call.call_id).toMatch(/^call_/);
    expect(call.id).toMatch(/^fc_/);
    expect(Object.keys(JSON.parse(call.arguments) as object)).toEqual(['city']);
    expect(first.tools).toEqual([{ ...WEATHER_TOOL, description: 'The weather in a city' }]);

    const second = await other.responses.create({
      model: stack.model,
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: '{"sky":"clear"}' }],
      tools: [WEATHER_TOOL],
      max_output_tokens: 60,
    });
    assertMatchesResponsesSchema('Response', second);
    expect(second.previous_response_id).toBe(first.id);
    // The first turn's prompt, its call and the output are the prompt now: more tokens than the first.
    expect(second.usage!.input_tokens).toBeGreaterThan(first.usage!.input_tokens);
  });

  it('streams a function call as function_call_arguments deltas', async () => {
    const { events } = await streamResponseEvents(baseURL, stack.apiKey, {
      model: stack.model,
      input: 'Weather in Rome?',
      tools: [WEATHER_TOOL],
      tool_choice: { type: 'function', name: 'get_weather' },
      max_output_tokens: 200,
    });
    expectWellFormedStream(events);
    expect(eventOutline(events)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const args = events
      .filter((event) => event.event === 'response.function_call_arguments.delta')
      .map((event) => event.data.delta as string)
      .join('');
    expect(events.find((event) => event.event === 'response.function_call_arguments.done')?.data).toMatchObject({ name: 'get_weather', arguments: args });
  });

  it('retrieves, lists the input items of, and deletes a stored response on any instance', async () => {
    const created = await client.responses.create({
      model: stack.model,
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'Hi' }] },
        { role: 'user', content: 'And again' },
      ],
      max_output_tokens: 20,
      metadata: { case: 'stored' },
    });
    const retrieved = await other.responses.retrieve(created.id);
    assertMatchesResponsesSchema('Response', retrieved);
    expect(retrieved).toMatchObject({ id: created.id, status: created.status, output: created.output, metadata: { case: 'stored' } });

    const items = await other.responses.inputItems.list(created.id, { order: 'asc' });
    assertItemList(items);
    expect(items.data.map((item) => (item as { content: Array<{ text: string }> }).content[0].text)).toEqual(['Hi', 'And again']);
    const page = await client.responses.inputItems.list(created.id, { limit: 1 });
    expect(page.data.map((item) => item.id)).toEqual([items.data[1].id]);
    expect(page.has_more).toBe(true);

    await other.responses.delete(created.id);
    await expect(client.responses.retrieve(created.id)).rejects.toMatchObject({ status: 404 });
  });

  it('refuses store:false ids as previous_response_id and unknown models, naming the field', async () => {
    const unstored = await client.responses.create({ model: stack.model, input: 'Hi', store: false, max_output_tokens: 16 });
    expect((unstored as unknown as { store: boolean }).store).toBe(false);
    await expect(client.responses.retrieve(unstored.id)).rejects.toMatchObject({ status: 404 });
    const refused = await fetch(`${baseURL}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: stack.model, input: 'Go on', previous_response_id: unstored.id }),
    });
    expect(refused.status).toBe(400);
    const body = await refused.json();
    assertMatchesResponsesSchema('ErrorResponse', body);
    expect(body).toMatchObject({ error: { param: 'previous_response_id', code: 'previous_response_not_found' } });
    await expect(client.responses.create({ model: 'no-such-model', input: 'Hi' })).rejects.toMatchObject({ status: 404, param: 'model' });
    await expect(client.responses.create({ model: stack.model, input: 'Hi', background: true, store: false })).rejects.toMatchObject({
      status: 400,
      param: 'background',
    });
    await expect(client.responses.create({ model: stack.model, input: [{ type: 'input_image' } as never] })).rejects.toMatchObject({
      status: 400,
      param: 'input[0].type',
    });
    await expect(
      client.responses.create({ model: stack.model, input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://x', detail: 'auto' }] }] }),
    ).rejects.toMatchObject({ status: 400, param: 'input[0].content[0].type' });
  });

  it("keeps an assistant message's phase as sent, echoes the penalties, and refuses a phase it does not know", async () => {
    const input: OpenAI.Responses.ResponseInput = [
      { role: 'user', content: 'Where is the rabbit?' },
      { type: 'message', role: 'assistant', content: 'Looking.', phase: 'commentary' },
      { role: 'user', content: 'And now?' },
    ];
    // Open Responses' fields, which this openai package does not declare: sent as they are.
    const body = { model: stack.model, input, max_output_tokens: 16, presence_penalty: 0.5, frequency_penalty: 0.25 };
    const response = await client.responses.create(body);
    assertMatchesResponsesSchema('Response', response);
    expect(response).toMatchObject({ presence_penalty: 0.5, frequency_penalty: 0.25 });
    const items = await other.responses.inputItems.list(response.id, { order: 'asc' });
    assertItemList(items);
    expect(items.data.map((item) => (item.type === 'message' ? [item.role, (item as { phase?: string }).phase] : [item.type]))).toEqual([
      ['user', undefined],
      ['assistant', 'commentary'],
      ['user', undefined],
    ]);
    const wrong = [{ type: 'message', role: 'assistant', content: 'Hm.', phase: 'aside' }] as unknown as OpenAI.Responses.ResponseInput;
    await expect(client.responses.create({ model: stack.model, input: wrong })).rejects.toMatchObject({ status: 400, param: 'input[0].phase' });
  });

  it('offers hosted tools to nobody: a request with web_search beside a function is answered', async () => {
    const response = await client.responses.create({ model: stack.model, input: 'Hi', tools: [{ type: 'web_search' }, WEATHER_TOOL], max_output_tokens: 30 });
    assertMatchesResponsesSchema('Response', response);
    expect(response.tools.map((tool) => tool.type)).toEqual(['function']);
  });
});
