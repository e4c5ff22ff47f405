import OpenAI from 'openai';
import { e2eStack } from './support/stack-env';
import { assertMatchesSchema } from './support/openai-schema';
import { postForEvents } from './support/sse';

/**
 * The official `openai` client against a real API, Redis, worker and llama.cpp model: what an
 * application developer sees.
 */
describe('POST /v1/chat/completions', () => {
  const stack = e2eStack();
  const [baseURL] = stack.apiUrls;
  const client = new OpenAI({ baseURL, apiKey: stack.apiKey, maxRetries: 0 });
  const model = stack.model;
  const question: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Tell me about the rabbit.' }];

  async function streamed(params: Omit<OpenAI.ChatCompletionCreateParamsStreaming, 'stream' | 'model'>) {
    const stream = await client.chat.completions.create({ ...params, model, stream: true });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const content = chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('');
    return { chunks, content };
  }

  /** A greedy (temperature 0) answer to the question, whole. */
  const greedyAnswer = (params: Omit<OpenAI.ChatCompletionCreateParamsNonStreaming, 'model' | 'messages' | 'temperature'>) =>
    client.chat.completions.create({ model, messages: question, temperature: 0, ...params });

  it('answers with one chat.completion body, counted by the model tokenizer', async () => {
    const completion = await client.chat.completions.create({ model, messages: question, max_tokens: 40, seed: 7 });

    assertMatchesSchema('CreateChatCompletionResponse', completion);
    expect(completion.id).toMatch(/^chatcmpl-[A-Za-z0-9_-]{10,}$/);
    expect(completion.object).toBe('chat.completion');
    expect(completion.model).toBe(model);
    expect(Math.abs(completion.created - Date.now() / 1000)).toBeLessThan(60);
    const [choice] = completion.choices;
    expect(choice.index).toBe(0);
    expect(choice.message.role).toBe('assistant');
    expect(choice.message.content).toMatch(/[a-z]{2,}/);
    expect(['stop', 'length']).toContain(choice.finish_reason);
    const usage = completion.usage!;
    expect(usage.prompt_tokens).toBeGreaterThan(5);
    expect(usage.completion_tokens).toBeGreaterThan(0);
    expect(usage.completion_tokens).toBeLessThanOrEqual(40);
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
  });

  it('streams chunks whose deltas add up to the non-stream answer for the same seeded request', async () => {
    const request = { messages: question, max_tokens: 30, seed: 1234, temperature: 1 };
    const whole = await client.chat.completions.create({ ...request, model });
    const { chunks, content } = await streamed(request);

    for (const chunk of chunks) assertMatchesSchema('CreateChatCompletionStreamResponse', chunk);
    expect(new Set(chunks.map((chunk) => chunk.id)).size).toBe(1);
    expect(chunks[0].id).toMatch(/^chatcmpl-/);
    expect(chunks.every((chunk) => chunk.object === 'chat.completion.chunk')).toBe(true);
    expect(chunks[0].choices[0].delta.role).toBe('assistant');
    const last = chunks.at(-1)!;
    expect(last.choices[0].delta).toEqual({});
    expect(last.choices[0].finish_reason).toBe(whole.choices[0].finish_reason);
    expect(chunks.slice(0, -1).every((chunk) => chunk.choices[0].finish_reason === null)).toBe(true);
    expect(content).toBe(whole.choices[0].message.content);
    expect(content.length).toBeGreaterThan(0);
  });

  it('frames the stream as `data:` events separated by blank lines, ending with [DONE]', async () => {
    const capture = await postForEvents(`${baseURL}/chat/completions`, stack.apiKey, {
      model,
      messages: question,
      max_tokens: 8,
      stream: true,
    });

    expect(capture.status).toBe(200);
    expect(capture.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(capture.raw.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(capture.data.at(-1)).toBe('[DONE]');
    expect(capture.data.filter((data) => data === '[DONE]')).toHaveLength(1);
    for (const data of capture.data.slice(0, -1)) assertMatchesSchema('CreateChatCompletionStreamResponse', JSON.parse(data));
  });

  it('ends with finish_reason "length" when max_tokens runs out, in both modes', async () => {
    const whole = await greedyAnswer({ max_tokens: 3 });
    expect(whole.choices[0].finish_reason).toBe('length');
    expect(whole.usage!.completion_tokens).toBe(3);

    const { chunks } = await streamed({ messages: question, max_completion_tokens: 3, temperature: 0 });
    expect(chunks.at(-1)!.choices[0].finish_reason).toBe('length');
  });

  it('stops at a stop sequence without sending any of it, in both modes', async () => {
    // Greedy decoding repeats itself, so its own text tells which stop sequence will come up.
    const free = await greedyAnswer({ max_tokens: 40 });
    const freeText = free.choices[0].message.content!;
    const words = freeText.trim().split(/\s+/);
    const stopWord = words[3];
    const stop = ` ${stopWord}`;
    const expected = freeText.slice(0, freeText.indexOf(stop));

    const whole = await greedyAnswer({ max_tokens: 40, stop: [stop, 'zzzz'] });
    expect(whole.choices[0].finish_reason).toBe('stop');
    expect(whole.choices[0].message.content).toBe(expected);

    const { chunks, content } = await streamed({ messages: question, max_tokens: 40, temperature: 0, stop });
    // Equal, not just a prefix: no part of the stop sequence was sent, not even its first characters.
    expect(content).toBe(expected);
    expect(chunks.at(-1)!.choices[0].finish_reason).toBe('stop');
  });

  it('keeps the end of an answer cut by max_tokens that could have begun a stop sequence, in both modes', async () => {
    const free = await greedyAnswer({ max_tokens: 13 });
    const freeText = free.choices[0].message.content!;
    // The answer's last characters begin this stop sequence, which never completes.
    const stop = `${freeText.slice(-2)}qzqz`;

    const whole = await greedyAnswer({ max_tokens: 13, stop });
    expect(whole.choices[0].message.content).toBe(freeText);
    expect(whole.choices[0].finish_reason).toBe('length');

    const { chunks, content } = await streamed({ messages: question, max_tokens: 13, temperature: 0, stop: [stop] });
    expect(content).toBe(freeText);
    expect(chunks.at(-1)!.choices[0].finish_reason).toBe('length');
  });

  it('continues a multi-turn conversation with a system prompt', async () => {
    const completion = await client.chat.completions.create({
      model,
      max_tokens: 20,
      messages: [
        { role: 'system', content: 'You are a storyteller.' },
        { role: 'user', content: 'Begin a story.' },
        { role: 'assistant', content: 'The rabbit ran down the hole.' },
        { role: 'user', content: 'And then?' },
      ],
    });
    const single = await client.chat.completions.create({ model, max_tokens: 20, messages: [{ role: 'user', content: 'And then?' }] });
    expect(completion.choices[0].message.content!.length).toBeGreaterThan(0);
    // The whole conversation reaches the model: its prompt is longer than the last turn alone.
    expect(completion.usage!.prompt_tokens).toBeGreaterThan(single.usage!.prompt_tokens + 10);
  });

  it('sends a usage chunk with empty choices before [DONE] when stream_options.include_usage is set', async () => {
    const { chunks } = await streamed({ messages: question, max_tokens: 10, stream_options: { include_usage: true } });
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage!.completion_tokens).toBeGreaterThan(0);
    expect(last.usage!.total_tokens).toBe(last.usage!.prompt_tokens + last.usage!.completion_tokens);
    expect(chunks.slice(0, -1).every((chunk) => chunk.usage === null)).toBe(true);
  });

  it('samples by the seed, with every sampling setting sent: the same seed repeats, other seeds differ', async () => {
    const request = {
      model,
      messages: question,
      max_tokens: 25,
      temperature: 1.5,
      top_p: 0.9,
      frequency_penalty: 0.5,
      presence_penalty: 0.5,
      n: 1,
      user: 'e2e-user',
    };
    const first = await client.chat.completions.create({ ...request, seed: 42 });
    const again = await client.chat.completions.create({ ...request, seed: 42 });
    expect(again.choices[0].message.content).toBe(first.choices[0].message.content);

    const others = await Promise.all([1, 2, 3].map((seed) => client.chat.completions.create({ ...request, seed })));
    const texts = new Set([first, ...others].map((completion) => completion.choices[0].message.content));
    expect(texts.size).toBeGreaterThan(1);
  });

  it('applies top_p: a tiny one at a high temperature leaves only the greedy answer, whatever the seed', async () => {
    const greedy = await greedyAnswer({ max_tokens: 20 });
    const narrowed = await Promise.all(
      [1, 2, 3].map((seed) => client.chat.completions.create({ model, messages: question, max_tokens: 20, temperature: 1.5, top_p: 1e-6, seed })),
    );
    for (const completion of narrowed) expect(completion.choices[0].message.content).toBe(greedy.choices[0].message.content);
  });

  it.each(['presence_penalty', 'frequency_penalty'] as const)('applies %s: a strong one changes a greedy answer', async (penalty) => {
    const plain = await greedyAnswer({ max_tokens: 30 });
    const penalised = await greedyAnswer({ max_tokens: 30, [penalty]: 2 });
    expect(penalised.choices[0].message.content).not.toBe(plain.choices[0].message.content);
  });

  it('lists the served models in OpenAI shape', async () => {
    const page = await client.models.list();
    expect(page.data.map((entry) => entry.id)).toContain(model);
    for (const entry of page.data) assertMatchesSchema('Model', entry);
    const raw = await fetch(`${baseURL}/models`, { headers: { authorization: `Bearer ${stack.apiKey}` } });
    assertMatchesSchema('ListModelsResponse', await raw.json());
    const one = await client.models.retrieve(model);
    expect(one.id).toBe(model);
  });
});
