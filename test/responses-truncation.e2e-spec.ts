import OpenAI from 'openai';
import { assertMatchesResponsesSchema } from './support/openai-responses-schema';
import { STACK_API_KEY, STACK_MODEL, ServiceStack } from './support/service-stack';

/**
 * `truncation: "auto"` on the real llama worker with a 256-token context: a conversation too long
 * for it loses its oldest items until it fits (OpenAI's behaviour), where `disabled` refuses it.
 */
describe('Responses API truncation', () => {
  const CONTEXT = 256;
  let stack: ServiceStack;
  let client: OpenAI;

  beforeAll(async () => {
    stack = await ServiceStack.start({ name: 'responses-truncation', workerEnv: { CONTEXT_SIZE: String(CONTEXT) } });
    client = new OpenAI({ baseURL: stack.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
  });
  afterAll(() => stack?.stop());

  const sentence = 'the rabbit ran over the hill and the fox sat by the old tree in the wood';
  /** Eight turns, each user message and answer a few dozen tokens: well over 256 in all. */
  const turns: OpenAI.Responses.ResponseInput = Array.from({ length: 8 }, (_, turn) => [
    { role: 'user' as const, content: `Turn ${turn}: ${sentence}.` },
    { role: 'assistant' as const, content: `Answer ${turn}: ${sentence}.` },
  ]).flat();
  const input = [...turns, { role: 'user' as const, content: 'And then?' }];
  const request = { model: STACK_MODEL, instructions: 'You tell stories.', max_output_tokens: 16, temperature: 0, store: false };

  it('refuses a conversation over the context with truncation disabled (the default)', async () => {
    const refused = await client.responses.create({ ...request, input }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('context_length_exceeded');
    // This door's prompt is `input` (the chat door names `messages`).
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('input');
  });

  it('drops the oldest items with truncation auto: the answer is that of the longest recent part that fits, instructions kept', async () => {
    const response = await client.responses.create({ ...request, input, truncation: 'auto' });
    assertMatchesResponsesSchema('Response', response);
    expect(response.truncation).toBe('auto');
    expect(response.usage!.input_tokens + 16).toBeLessThanOrEqual(CONTEXT);
    // Each part that begins at a user message, asked without truncation: the longest that fits is what was answered.
    const starts = input.flatMap((item, index) => ('role' in item && item.role === 'user' ? [index] : []));
    const parts = await Promise.all(
      starts.map((start) =>
        client.responses.create({ ...request, input: input.slice(start) }).then(
          (answer) => ({ start, answer }),
          () => ({ start, answer: undefined }),
        ),
      ),
    );
    const longest = parts.find((part) => part.answer !== undefined)!;
    expect(longest.start).toBeGreaterThan(0);
    expect(parts.filter((part) => part.start > longest.start).every((part) => part.answer !== undefined)).toBe(true);
    expect(response.usage!.input_tokens).toBe(longest.answer.usage!.input_tokens);
    expect(response.output_text).toBe(longest.answer.output_text);
    const withoutInstructions = await client.responses.create({ ...request, instructions: undefined, input: input.slice(longest.start) });
    expect(withoutInstructions.usage!.input_tokens).toBeLessThan(response.usage!.input_tokens);
  });
});
