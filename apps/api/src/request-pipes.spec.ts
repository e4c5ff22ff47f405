import { ChatCompletionRequestDto } from './openai/chat/chat-request.dto';
import { toChatJob } from './openai/chat/chat-job.mapper';
import { validateBody } from './request-pipes';

const jobOf = async (body: object) => toChatJob(await validateBody({ model: 'm', ...body }, ChatCompletionRequestDto), 'chatcmpl-1', 1_000, 30_000);
const weather = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } };

describe('request pipes', () => {
  it("reads fields sent as null as not sent, the request's own and each message's", async () => {
    const nulls = {
      seed: null,
      stop: null,
      max_tokens: null,
      max_completion_tokens: 5,
      logprobs: null,
      top_logprobs: null,
      tool_choice: null,
      tools: [weather],
      stream_options: null,
      temperature: null,
      messages: [
        { role: 'user', content: 'Weather?', name: null },
        { role: 'assistant', content: 'Let me see.', tool_calls: null, refusal: null },
        { role: 'user', content: 'In Paris?' },
      ],
    };
    const [first, second] = await Promise.all([jobOf(nulls), jobOf(nulls)]);
    expect(first.options.sampling).toMatchObject({ stop: [], temperature: 1, maxTokens: 5 });
    // A random seed for each request, as when none is sent: not `null >>> 0`, which is 0 for all.
    expect(first.options.sampling.seed).not.toBe(second.options.sampling.seed);
    expect(first.options.logprobs).toBeUndefined();
    expect(first.options.tools?.choice).toEqual({ type: 'auto' });
    expect(first.options.messages).toEqual([
      { role: 'user', content: 'Weather?' },
      { role: 'assistant', content: 'Let me see.' },
      { role: 'user', content: 'In Paris?' },
    ]);
  });

  it('leaves null inside a schema, where it is a value', async () => {
    const schema = { type: 'object', properties: { nothing: { const: null } }, required: ['nothing'] };
    const built = await jobOf({ messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_schema', json_schema: { name: 'n', schema } } });
    expect(built.options.responseFormat).toMatchObject({ type: 'json_schema', schema: { properties: { nothing: { const: null } } } });
  });
});
