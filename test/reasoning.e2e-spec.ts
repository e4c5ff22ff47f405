import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, streamText } from 'ai';
import OpenAI from 'openai';
import { assertMatchesSchema } from './support/openai-schema';
import { STACK_API_KEY, ServiceStack } from './support/service-stack';

/**
 * A reasoning model on the real llama.cpp worker: tiny-think is the tiny model with a chat
 * template after Qwen3's (`npm run model`, tools/tiny-model/thinking-template.ts), whose
 * assistant turn opens a `<think>` segment. Its weights never close it, so with thinking on its
 * whole answer is thought: it must arrive as `reasoning_content`, never as content, through the
 * official client and the AI SDK; `reasoning_effort: "none"` turns it into a plain answer.
 */
describe('reasoning models', () => {
  const model = 'tiny-think';
  let stack: ServiceStack;
  let client: OpenAI;

  beforeAll(async () => {
    stack = await ServiceStack.start({ name: 'reasoning', workers: 0, models: [model] });
    await stack.addWorker({}, model);
    client = new OpenAI({ baseURL: stack.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
  });
  afterAll(() => stack?.stop());

  const request = { model, messages: [{ role: 'user' as const, content: 'Tell me about the rabbit.' }], max_tokens: 12, temperature: 0, seed: 3 };
  type Message = OpenAI.ChatCompletionMessage & { reasoning_content?: string };
  type Delta = OpenAI.ChatCompletionChunk.Choice.Delta & { reasoning_content?: string };

  it('answers the thinking as message.reasoning_content, counted in usage as reasoning tokens', async () => {
    const completion = await client.chat.completions.create(request);
    assertMatchesSchema('CreateChatCompletionResponse', completion);
    const message = completion.choices[0].message as Message;
    expect(message.content).toBe('');
    expect(message.reasoning_content).toMatch(/^\S.*\w/);
    expect(completion.usage?.completion_tokens).toBe(12);
    expect(completion.usage?.completion_tokens_details?.reasoning_tokens).toBe(12);
  });

  it('streams the thinking as reasoning_content deltas, the same text as the whole answer, and no content', async () => {
    const whole = await client.chat.completions.create(request);
    const deltas: Delta[] = [];
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of await client.chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } })) {
      assertMatchesSchema('CreateChatCompletionStreamResponse', chunk);
      if (chunk.choices[0]) deltas.push(chunk.choices[0].delta);
      usage = chunk.usage ?? usage;
    }
    const reasoning = deltas.map((delta) => delta.reasoning_content ?? '');
    expect(reasoning.filter((piece) => piece !== '').length).toBeGreaterThan(1);
    expect(reasoning.join('')).toBe((whole.choices[0].message as Message).reasoning_content);
    expect(deltas.map((delta) => delta.content ?? '').join('')).toBe('');
    expect(usage?.completion_tokens_details?.reasoning_tokens).toBe(12);
  });

  it.each(['none', 'minimal'] as const)('answers without thinking for reasoning_effort %s: content, no reasoning, 0 reasoning tokens', async (effort) => {
    const thinking = await client.chat.completions.create({ ...request, reasoning_effort: 'high' });
    const completion = await client.chat.completions.create({ ...request, reasoning_effort: effort });
    assertMatchesSchema('CreateChatCompletionResponse', completion);
    const message = completion.choices[0].message as Message;
    // The same words the model thinks with, now as the answer.
    expect(message.content).toBe((thinking.choices[0].message as Message).reasoning_content);
    expect(message.reasoning_content).toBeUndefined();
    expect(completion.usage?.completion_tokens_details?.reasoning_tokens).toBe(0);
    // The closed, empty thought is part of the prompt.
    expect(completion.usage!.prompt_tokens).toBeGreaterThan(thinking.usage!.prompt_tokens);
  });

  it("takes an earlier answer's reasoning back as reasoning_content or reasoning, and renders it in the prompt", async () => {
    const turn = (extra: object) =>
      [
        { role: 'user', content: 'Tell me about the rabbit.' },
        { role: 'assistant', content: 'It ran.', ...extra },
        { role: 'user', content: 'And then?' },
      ] as OpenAI.ChatCompletionMessageParam[];
    const ask = (extra: object) => client.chat.completions.create({ ...request, messages: turn(extra) });
    const [plain, asContent, asReasoning] = await Promise.all([
      ask({}),
      ask({ reasoning_content: 'The rabbit was late.' }),
      ask({ reasoning: 'The rabbit was late.' }),
    ]);
    expect(asContent.usage!.prompt_tokens).toBeGreaterThan(plain.usage!.prompt_tokens);
    expect(asReasoning.usage!.prompt_tokens).toBe(asContent.usage!.prompt_tokens);
    const refused = await client.chat.completions
      .create({ ...request, messages: [{ role: 'user', content: 'Hi', reasoning_content: 'no' } as OpenAI.ChatCompletionMessageParam] })
      .then(
        () => undefined,
        (caught: unknown) => caught,
      );
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('messages[0].reasoning_content');
  });

  it('gives the AI SDK the thinking as reasoning, not text, whole and streamed, and takes it back in the next turn', async () => {
    const provider = createOpenAICompatible({ name: 'queued', baseURL: stack.baseUrl, apiKey: STACK_API_KEY });
    const whole = await client.chat.completions.create(request);
    const expected = (whole.choices[0].message as Message).reasoning_content;
    const options = { model: provider.chatModel(model), prompt: 'Tell me about the rabbit.', maxOutputTokens: 12, temperature: 0, seed: 3 };
    const generated = await generateText(options);
    expect(generated.text).toBe('');
    expect(generated.reasoningText).toBe(expected);
    const streamed = streamText(options);
    expect(await streamed.text).toBe('');
    expect(await streamed.reasoningText).toBe(expected);
    // The SDK sends the reasoning back with the assistant message (as reasoning_content).
    const next = await generateText({
      ...options,
      prompt: undefined,
      messages: [{ role: 'user', content: 'Tell me about the rabbit.' }, ...generated.response.messages, { role: 'user', content: 'And then?' }],
    });
    expect(next.reasoningText).toMatch(/\w/);
  });
});
