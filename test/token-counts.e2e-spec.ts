import OpenAI from 'openai';
import { assertMatchesResponsesSchema } from './support/openai-responses-schema';
import { e2eStack } from './support/stack-env';

/**
 * Token counts on the real llama worker, where the model's tokenizer is: vLLM's `/tokenize` and
 * `/detokenize`, and OpenAI's `POST /v1/responses/input_tokens`, whose count is the prompt the
 * same request's answer is given (its `usage.input_tokens`), tools and the conversation it
 * continues included.
 */
describe('Token counts', () => {
  const stack = e2eStack();
  const [baseURL] = stack.apiUrls;
  const root = baseURL.replace(/\/v1$/, '');
  const client = new OpenAI({ baseURL, apiKey: stack.apiKey, maxRetries: 0 });

  const post = async (path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> => {
    const response = await fetch(`${root}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  it('tokenizes text and detokenizes it back (vLLM shape)', async () => {
    const prompt = 'Alice was beginning to get very tired of sitting by her sister';
    const tokenized = await post('/tokenize', { model: stack.model, prompt, add_special_tokens: false });
    expect(tokenized.status).toBe(200);
    const { tokens, count, max_model_len: maxModelLength } = tokenized.body as { tokens: number[]; count: number; max_model_len: number };
    expect(count).toBe(tokens.length);
    expect(count).toBeGreaterThan(5);
    expect(maxModelLength).toBeGreaterThanOrEqual(256);
    const back = await post('/detokenize', { model: stack.model, tokens });
    expect(back).toEqual({ status: 200, body: { prompt } });
  });

  it('tokenizes a conversation (vLLM shape) as a chat completion of it is prompted', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: 'You tell stories.' },
      { role: 'user', content: 'Where did the rabbit go?' },
    ];
    const tokenized = await post('/tokenize', { model: stack.model, messages });
    expect(tokenized.status).toBe(200);
    const { tokens, count } = tokenized.body as { tokens: number[]; count: number };
    const answered = await client.chat.completions.create({ model: stack.model, messages, max_tokens: 1 });
    expect(count).toBe(answered.usage?.prompt_tokens);
    // The template's text around the messages is in the tokens, and the messages' own text.
    const text = (await post('/detokenize', { model: stack.model, tokens })).body.prompt as string;
    expect(text).toContain('Where did the rabbit go?');
    expect(text.length).toBeGreaterThan('You tell stories.Where did the rabbit go?'.length);
  });

  it('refuses what it cannot count, naming the field', async () => {
    const cases: Array<[string, unknown, string]> = [
      ['/tokenize', { model: stack.model }, 'prompt'],
      ['/tokenize', { model: stack.model, messages: [] }, 'messages'],
      ['/tokenize', { model: stack.model, messages: [{ role: 'tool', content: 'Hi' }] }, 'messages[0].tool_call_id'],
      ['/tokenize', { model: stack.model, messages: [{ role: 'user', content: 'Hi' }], add_generation_prompt: false }, 'add_generation_prompt'],
      ['/tokenize', { model: stack.model, messages: [{ role: 'user', content: 'Hi' }], add_special_tokens: true }, 'add_special_tokens'],
      ['/tokenize', { model: stack.model, messages: [{ role: 'user', content: 'Hi' }], prompt: 'Hi' }, 'prompt'],
      ['/detokenize', { model: stack.model, tokens: [1, -2] }, 'tokens'],
      ['/detokenize', { model: stack.model, tokens: [1, 10_000_000] }, 'tokens'],
    ];
    for (const [path, body, param] of cases) {
      const answer = await post(path, body);
      expect({ body, status: answer.status, param: (answer.body.error as { param?: string } | undefined)?.param }).toEqual({ body, status: 400, param });
    }
  });

  it("counts a Responses request's input as its answer is given it: instructions, tools, and the conversation it continues", async () => {
    const tools: OpenAI.Responses.Tool[] = [
      {
        type: 'function',
        name: 'find_rabbit',
        description: 'Finds the white rabbit',
        parameters: { type: 'object', properties: { where: { type: 'string' } }, required: ['where'], additionalProperties: false },
        strict: true,
      },
    ];
    const request = { model: stack.model, instructions: 'Be brief.', input: 'Where did the rabbit go?', tools, tool_choice: 'none' as const };
    const counted = await client.responses.inputTokens.count(request);
    expect(counted.object).toBe('response.input_tokens');
    const answered = await client.responses.create({ ...request, max_output_tokens: 16 });
    assertMatchesResponsesSchema('Response', answered);
    expect(counted.input_tokens).toBe(answered.usage?.input_tokens);

    const next = { model: stack.model, previous_response_id: answered.id, input: 'And then?' };
    const countedNext = await client.responses.inputTokens.count(next);
    expect(countedNext.input_tokens).toBeGreaterThan(counted.input_tokens);
    const answeredNext = await client.responses.create({ ...next, max_output_tokens: 16 });
    expect(countedNext.input_tokens).toBe(answeredNext.usage?.input_tokens);
  });
});
