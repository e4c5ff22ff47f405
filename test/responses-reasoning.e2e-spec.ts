import { createOpenAI } from '@ai-sdk/openai';
import { generateText, streamText } from 'ai';
import OpenAI from 'openai';
import { assertMatchesResponsesSchema } from './support/openai-responses-schema';
import { expectWellFormedStream, streamResponseEvents } from './support/response-events';
import type { ResponseEvent } from './support/response-events';
import { STACK_API_KEY, ServiceStack } from './support/service-stack';

type Reasoning = OpenAI.Responses.ResponseReasoningItem;

/**
 * A reasoning model behind /v1/responses, on the real llama.cpp worker: tiny-think (`npm run
 * model`) opens a `<think>` segment its weights never close, so with thinking on its whole answer
 * is thought. It must come out as a `reasoning` item (its text as `reasoning_text` content, and as
 * the summary when `reasoning.summary` asks for one), streamed as OpenAI streams one, counted as
 * reasoning tokens, read as reasoning by openai-node and the AI SDK's @ai-sdk/openai, and taken
 * back as input.
 */
describe('Responses API with a reasoning model', () => {
  const model = 'tiny-think';
  let stack: ServiceStack;
  let client: OpenAI;

  beforeAll(async () => {
    stack = await ServiceStack.start({ name: 'responses-reasoning', workers: 0, models: [model] });
    await stack.addWorker({}, model);
    client = new OpenAI({ baseURL: stack.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
  });
  afterAll(() => stack?.stop());

  const request = { model, input: 'Tell me about the rabbit.', max_output_tokens: 16, temperature: 0 };
  const thoughtOf = (response: OpenAI.Responses.Response): string => (response.output[0] as Reasoning).content?.[0]?.text ?? '';

  it('answers with the thought as a reasoning item, cut short as incomplete, counted as reasoning tokens', async () => {
    const response = await client.responses.create(request);
    assertMatchesResponsesSchema('Response', response);
    expect(response.status).toBe('incomplete');
    expect(response.output).toHaveLength(1);
    const [item] = response.output as Reasoning[];
    expect(item).toMatchObject({ type: 'reasoning', summary: [], status: 'incomplete' });
    expect(item.id).toMatch(/^rs_/);
    expect(item.content?.map((part) => part.type)).toEqual(['reasoning_text']);
    expect(thoughtOf(response)).toMatch(/^\S.*\w/);
    expect(response.output_text).toBe('');
    expect(response.usage?.output_tokens).toBe(16);
    expect(response.usage?.output_tokens_details.reasoning_tokens).toBe(16);
  });

  it('gives the thought as the summary too when reasoning.summary asks for one', async () => {
    const [plain, summarised] = await Promise.all([client.responses.create(request), client.responses.create({ ...request, reasoning: { summary: 'auto' } })]);
    assertMatchesResponsesSchema('Response', summarised);
    expect(summarised.reasoning).toEqual({ effort: null, summary: 'auto' });
    const item = summarised.output[0] as Reasoning;
    expect(item.content?.[0].text).toBe(thoughtOf(plain));
    expect(item.summary).toEqual([{ type: 'summary_text', text: thoughtOf(plain) }]);
  });

  it("streams the thought as reasoning_text and reasoning_summary events in OpenAI's order, each valid against the schema", async () => {
    const whole = await client.responses.create(request);
    const { status, events } = await streamResponseEvents(stack.baseUrl, STACK_API_KEY, { ...request, reasoning: { summary: 'detailed' } });
    expect(status).toBe(200);
    expectWellFormedStream(events, 'response.incomplete');
    const deltas = (type: string): string[] => events.filter((event) => event.event === type).map((event) => event.data.delta as string);
    expect(events.filter((event) => !event.event.endsWith('.delta')).map((event) => event.event)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.reasoning_summary_part.added',
      'response.reasoning_text.done',
      'response.content_part.done',
      'response.reasoning_summary_text.done',
      'response.reasoning_summary_part.done',
      'response.output_item.done',
      'response.incomplete',
    ]);
    const text = thoughtOf(whole);
    expect(deltas('response.reasoning_text.delta').length).toBeGreaterThan(1);
    expect(deltas('response.reasoning_text.delta').join('')).toBe(text);
    expect(deltas('response.reasoning_summary_text.delta')).toEqual(deltas('response.reasoning_text.delta'));
    const find = (type: string): ResponseEvent['data'] => events.find((event) => event.event === type)!.data;
    expect(find('response.reasoning_summary_part.done')).toMatchObject({ part: { type: 'summary_text', text }, status: 'incomplete' });
    const final = events.at(-1)!.data.response as OpenAI.Responses.Response;
    expect(final.output).toEqual([
      expect.objectContaining({ type: 'reasoning', summary: [{ type: 'summary_text', text }], content: [{ type: 'reasoning_text', text }] }),
    ]);
    expect(final.usage?.output_tokens_details.reasoning_tokens).toBe(16);
  });

  it("is accumulated by openai-node's responses.stream() like OpenAI's own reasoning items", async () => {
    const whole = await client.responses.create(request);
    const stream = client.responses.stream({ ...request, reasoning: { summary: 'auto' } });
    let summaryDeltas = '';
    stream.on('response.reasoning_summary_text.delta', (event) => (summaryDeltas += event.delta));
    const final = await stream.finalResponse();
    const item = final.output[0] as Reasoning;
    expect(item.content).toEqual([{ type: 'reasoning_text', text: thoughtOf(whole) }]);
    expect(item.summary).toEqual([{ type: 'summary_text', text: thoughtOf(whole) }]);
    expect(summaryDeltas).toBe(thoughtOf(whole));
  });

  it.each(['none', 'minimal'] as const)(
    'answers without thinking for reasoning.effort %s: a message, no reasoning item, 0 reasoning tokens',
    async (effort) => {
      const [thinking, response] = await Promise.all([
        client.responses.create(request),
        client.responses.create({ ...request, reasoning: { effort, summary: 'auto' } }),
      ]);
      assertMatchesResponsesSchema('Response', response);
      expect(response.output.map((item) => item.type)).toEqual(['message']);
      // The same words the model thinks with, now as the answer.
      expect(response.output_text).toBe(thoughtOf(thinking));
      expect(response.usage?.output_tokens_details.reasoning_tokens).toBe(0);
      // The closed, empty thought is part of the prompt.
      expect(response.usage!.input_tokens).toBeGreaterThan(thinking.usage!.input_tokens);
    },
  );

  it("takes reasoning items back as input: their text is the next assistant turn's thought, encrypted content alone adds nothing", async () => {
    const turn = (reasoning: object[]): OpenAI.Responses.ResponseInput =>
      [
        { role: 'user', content: 'Tell me about the rabbit.' },
        ...reasoning,
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'It ran.', annotations: [] }] },
        { role: 'user', content: 'And then?' },
      ] as OpenAI.Responses.ResponseInput;
    const ask = (reasoning: object[]) => client.responses.create({ ...request, store: false, input: turn(reasoning) });
    const thought = { type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'The rabbit was late.' }] };
    const [plain, withContent, withSummary, encrypted] = await Promise.all([
      ask([]),
      ask([thought]),
      ask([{ type: 'reasoning', id: 'rs_client1', summary: [{ type: 'summary_text', text: 'The rabbit was late.' }] }]),
      ask([{ type: 'reasoning', summary: [], encrypted_content: 'gAAAAB-opaque' }]),
    ]);
    expect(withContent.usage!.input_tokens).toBeGreaterThan(plain.usage!.input_tokens);
    expect(withSummary.usage!.input_tokens).toBe(withContent.usage!.input_tokens);
    expect(encrypted.usage!.input_tokens).toBe(plain.usage!.input_tokens);
    const refused = await client.responses.create({ ...request, input: turn([{ type: 'reasoning', summary: [{ type: 'input_text', text: 'no' }] }]) }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('input[1].summary[0].type');
  });

  it('continues from a stored thinking response with previous_response_id, and finds its reasoning item by reference', async () => {
    const first = await client.responses.create(request);
    const next = await client.responses.create({ ...request, previous_response_id: first.id, input: 'And then?' });
    expect(next.status).toBe('incomplete');
    const referenced = await client.responses.create({
      ...request,
      input: [
        { role: 'user', content: 'Tell me about the rabbit.' },
        { type: 'item_reference', id: first.output[0].id },
        { role: 'user', content: 'And then?' },
      ] as OpenAI.Responses.ResponseInput,
    });
    const items = await client.responses.inputItems.list(referenced.id, { order: 'asc' });
    expect(items.data[1]).toMatchObject({ type: 'reasoning', id: first.output[0].id, content: [{ type: 'reasoning_text', text: thoughtOf(first) }] });
  });

  describe("AI SDK's @ai-sdk/openai provider", () => {
    // tiny-think is no OpenAI model id: forceReasoning makes the provider send `reasoning` and read reasoning parts.
    const providerOptions = { openai: { forceReasoning: true, reasoningSummary: 'auto' } };
    const options = () => ({
      model: createOpenAI({ baseURL: stack.baseUrl, apiKey: STACK_API_KEY })(model),
      prompt: 'Tell me about the rabbit.',
      maxOutputTokens: 16,
      maxRetries: 0,
      providerOptions,
    });

    it('reads the thought as reasoning with generateText, and sends it back by reference in the next turn', async () => {
      const generated = await generateText(options());
      expect(generated.text).toBe('');
      const stored = await client.responses.retrieve(generated.response.id);
      expect(generated.reasoningText).toMatch(/\w/);
      expect(generated.reasoningText).toBe(thoughtOf(stored));
      const next = await generateText({
        ...options(),
        prompt: undefined,
        messages: [{ role: 'user', content: 'Tell me about the rabbit.' }, ...generated.response.messages, { role: 'user', content: 'And then?' }],
      });
      const items = await client.responses.inputItems.list(next.response.id, { order: 'asc' });
      expect(items.data.map((item) => item.type)).toEqual(expect.arrayContaining(['reasoning']));
      expect(next.reasoningText).toMatch(/\w/);
    });

    it('streams the thought as reasoning parts with streamText', async () => {
      const streamed = streamText(options());
      const kinds = new Set<string>();
      for await (const part of streamed.fullStream) kinds.add(part.type);
      expect([...kinds]).toEqual(expect.arrayContaining(['reasoning-start', 'reasoning-delta', 'reasoning-end']));
      expect(await streamed.text).toBe('');
      const stored = await client.responses.retrieve((await streamed.response).id);
      expect(await streamed.reasoningText).toBe(thoughtOf(stored));
      // The count the SDK reads is the stored response's; how far tiny-think thinks varies with
      // what its sequence had cached, so the figure is not fixed.
      const reasoningTokens = stored.usage?.output_tokens_details.reasoning_tokens;
      expect(reasoningTokens).toBeGreaterThan(0);
      expect((await streamed.usage).outputTokenDetails.reasoningTokens).toBe(reasoningTokens);
    });
  });
});
