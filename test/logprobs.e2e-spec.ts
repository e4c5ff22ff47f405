import OpenAI from 'openai';
import { assertMatchesSchema } from './support/openai-schema';
import { e2eStack } from './support/stack-env';

type TokenLogprob = OpenAI.ChatCompletionTokenLogprob;

/**
 * `logprobs` / `top_logprobs` through the official client against the real llama.cpp worker: the
 * tokens spell the content exactly, the numbers are log probabilities of the model's own
 * distribution (greedy decoding picks the top one), and streams carry the same as whole answers.
 */
describe('logprobs', () => {
  const stack = e2eStack();
  const client = new OpenAI({ baseURL: stack.apiUrls[0], apiKey: stack.apiKey, maxRetries: 0 });
  const request = {
    model: stack.model,
    messages: [{ role: 'user' as const, content: 'Tell me about the rabbit.' }],
    max_tokens: 16,
    temperature: 0,
    seed: 7,
    logprobs: true,
    top_logprobs: 3,
  };

  function expectWellFormed(content: TokenLogprob[], top: number): void {
    for (const entry of content) {
      expect(entry.logprob).toBeLessThanOrEqual(0);
      expect(entry.bytes).toEqual([...Buffer.from(entry.token, 'utf8')]);
      expect(entry.top_logprobs).toHaveLength(top);
      const alternatives = entry.top_logprobs.map((alternative) => alternative.logprob);
      expect(alternatives).toEqual([...alternatives].sort((a, b) => b - a));
      // Distinct tokens of one distribution: their probabilities add up to at most 1.
      expect(alternatives.reduce((sum, logprob) => sum + Math.exp(logprob), 0)).toBeLessThanOrEqual(1 + 1e-6);
    }
  }

  it('answers each token with its log probability and top alternatives; greedy picks a most probable one', async () => {
    const completion = await client.chat.completions.create(request);
    assertMatchesSchema('CreateChatCompletionResponse', completion);
    const [choice] = completion.choices;
    const content = choice.logprobs?.content ?? [];
    expect(content.length).toBeGreaterThan(0);
    expect(content.map((entry) => entry.token).join('')).toBe(choice.message.content);
    // One entry per generated token; scoring them must not count as generating them again.
    expect(choice.finish_reason).toBe('length');
    expect(completion.usage?.completion_tokens).toBe(16);
    expect(content).toHaveLength(16);
    expectWellFormed(content, 3);
    // Greedy decoding takes a most probable token (the tiny model has exact ties, e.g. two at ln ½).
    for (const entry of content) expect(entry.logprob).toBeCloseTo(entry.top_logprobs[0].logprob, 6);
    expect(content.some((entry) => entry.logprob < -0.1)).toBe(true);

    // Without alternatives (top_logprobs 0, the default) each sampled token keeps its own number, not the most probable one's.
    const sampled = { ...request, temperature: 1.5, seed: 21 };
    const [withTop, withoutTop] = await Promise.all([sampled, { ...sampled, top_logprobs: undefined }].map((body) => client.chat.completions.create(body)));
    const expected = withTop.choices[0].logprobs?.content ?? [];
    expect(expected.some((entry) => entry.logprob < entry.top_logprobs[0].logprob - 0.1)).toBe(true);
    const scores = (withoutTop.choices[0].logprobs?.content ?? []).map((entry) => entry.logprob);
    expect(scores).toEqual(expected.map((entry) => entry.logprob));
  });

  it('streams the same log probabilities as the whole answer, which the client reassembles', async () => {
    const whole = await client.chat.completions.create(request);
    const stream = client.chat.completions.stream(request);
    for await (const chunk of stream) assertMatchesSchema('CreateChatCompletionStreamResponse', chunk);
    const streamed = await stream.finalChatCompletion();
    expect(streamed.choices[0].message.content).toBe(whole.choices[0].message.content);
    const tokens = (completion: { choices: Array<{ logprobs: { content: TokenLogprob[] | null } | null }> }) => completion.choices[0].logprobs?.content ?? [];
    expect(tokens(streamed).map(({ token }) => token)).toEqual(tokens(whole).map(({ token }) => token));
    tokens(streamed).forEach((entry, index) => expect(entry.logprob).toBeCloseTo(tokens(whole)[index].logprob, 6));
  });

  /** A stream's chunks as the client reads them, each checked against OpenAI's chunk schema. */
  async function streamedChunks(body: OpenAI.ChatCompletionCreateParamsNonStreaming): Promise<OpenAI.ChatCompletionChunk[]> {
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of await client.chat.completions.create({ ...body, stream: true })) {
      assertMatchesSchema('CreateChatCompletionStreamResponse', chunk);
      chunks.push(chunk);
    }
    return chunks;
  }

  it.each([
    ['a whole answer', {}],
    ['an answer cut by a stop sequence', { stop: ' the' }],
    ['a sampled answer', { temperature: 1, max_tokens: 24 }],
  ])("streams, in %s, each piece of text with its own tokens' log probabilities, equal to the whole answer's", async (_case, change) => {
    const body = { ...request, ...change };
    const whole = await client.chat.completions.create(body);
    const chunks = await streamedChunks(body);
    if ('stop' in change) expect(whole.choices[0].finish_reason).toBe('stop');
    const withText = chunks.filter((chunk) => (chunk.choices[0]?.delta.content ?? '') !== '');
    expect(withText.length).toBeGreaterThan(1);
    for (const chunk of chunks) {
      const [choice] = chunk.choices;
      const tokens = choice?.logprobs?.content ?? [];
      // A chunk's tokens spell its text: no text without its numbers, no numbers in a chunk of their own.
      expect(tokens.map(({ token }) => token).join('')).toBe(choice?.delta.content ?? '');
    }
    const streamedTokens = withText.flatMap((chunk) => chunk.choices[0].logprobs?.content ?? []);
    const wholeTokens = whole.choices[0].logprobs?.content ?? [];
    expect(withText.map((chunk) => chunk.choices[0].delta.content).join('')).toBe(whole.choices[0].message.content);
    expect(streamedTokens.map(({ token }) => token)).toEqual(wholeTokens.map(({ token }) => token));
    streamedTokens.forEach((entry, index) => {
      expect(entry.logprob).toBeCloseTo(wholeTokens[index].logprob, 6);
      expect(entry.top_logprobs.map(({ token }) => token)).toEqual(wholeTokens[index].top_logprobs.map(({ token }) => token));
    });
  });

  it('scores sampled answers, JSON under a grammar and every one of n choices', async () => {
    const completion = await client.chat.completions.create({
      ...request,
      temperature: 1,
      n: 2,
      top_logprobs: 0,
      response_format: { type: 'json_object' },
    });
    assertMatchesSchema('CreateChatCompletionResponse', completion);
    expect(completion.choices).toHaveLength(2);
    for (const choice of completion.choices) {
      const content = choice.logprobs?.content ?? [];
      expect(content.map((entry) => entry.token).join('')).toBe(choice.message.content);
      expectWellFormed(content, 0);
    }
  });

  it('scores only the tokens before a stop sequence', async () => {
    const free = await client.chat.completions.create(request);
    const freeTokens = free.choices[0].logprobs?.content ?? [];
    // Greedy decoding gives the same tokens again; the stop sequence is the fourth token onwards.
    const stop = freeTokens
      .slice(3)
      .map((entry) => entry.token)
      .join('');
    const completion = await client.chat.completions.create({ ...request, stop });
    const [choice] = completion.choices;
    expect(choice.finish_reason).toBe('stop');
    const kept = freeTokens.slice(0, 3).map((entry) => entry.token);
    expect(choice.message.content).toBe(kept.join(''));
    expect(choice.logprobs?.content?.map((entry) => entry.token)).toEqual(kept);
  });

  it('leaves logprobs null when not asked for', async () => {
    const completion = await client.chat.completions.create({ ...request, logprobs: false, top_logprobs: undefined });
    expect(completion.choices[0].logprobs).toBeNull();
  });

  it.each([
    [{ top_logprobs: 2, logprobs: undefined }, 'top_logprobs'],
    [{ top_logprobs: 21 }, 'top_logprobs'],
    [{ logprobs: 'yes' }, 'logprobs'],
    [
      {
        tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }],
        tool_choice: 'required',
      },
      'logprobs',
    ],
  ])('refuses %j with 400 naming %s', async (change, param) => {
    const error = await client.chat.completions.create({ ...request, ...(change as object) } as OpenAI.ChatCompletionCreateParamsNonStreaming).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe(param);
  });
});
