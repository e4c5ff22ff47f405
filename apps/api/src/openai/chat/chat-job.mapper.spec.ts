import { plainToInstance } from 'class-transformer';
import { ChatCompletionRequestDto } from './chat-request.dto';
import { toChatJob } from './chat-job.mapper';

const job = (body: object) => toChatJob(plainToInstance(ChatCompletionRequestDto, { model: 'm', ...body }), 'chatcmpl-1', 1_000, 30_000);
const refusal = (body: object): unknown => {
  try {
    job(body);
  } catch (error) {
    return error;
  }
  throw new Error('expected a refusal');
};

const weather = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } };
const call = { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } };

describe('toChatJob', () => {
  it("fills in OpenAI's defaults and a seed", () => {
    const built = job({
      messages: [
        { role: 'developer', content: [{ type: 'text', text: 'Be brief.' }] },
        { role: 'user', content: 'Hi' },
      ],
    });
    expect(built.options.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi' },
    ]);
    expect(built.options.sampling).toMatchObject({ temperature: 1, topP: 1, stop: [], frequencyPenalty: 0, presencePenalty: 0 });
    expect(Number.isInteger(built.options.sampling.seed)).toBe(true);
    expect(built.options.responseFormat).toEqual({ type: 'text' });
    expect(built.options.tools).toBeUndefined();
    expect(built.schedule.startDeadline).toBe(31_000);
  });

  it('carries a conversation with a call and its result, and the tools with their choice', () => {
    const built = job({
      messages: [
        { role: 'user', content: 'Weather?' },
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: 'call_1', content: '{"sunny":true}' },
      ],
      tools: [weather],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      parallel_tool_calls: false,
    });
    expect(built.options.messages[1]).toEqual({
      role: 'assistant',
      content: '',
      toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' }],
    });
    expect(built.options.messages[2]).toEqual({ role: 'tool', content: '{"sunny":true}', toolCallId: 'call_1' });
    expect(built.options.tools).toEqual({
      definitions: [{ name: 'get_weather', description: undefined, parameters: { type: 'object', properties: { city: { type: 'string' } } } }],
      choice: { type: 'function', name: 'get_weather' },
      parallel: false,
    });
  });

  it("maps reasoning: an assistant's reasoning_content or reasoning, and reasoning_effort none or minimal as thinking off", () => {
    const messages = (extra: object) => [
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello', ...extra },
      { role: 'user', content: 'Again' },
    ];
    expect(job({ messages: messages({ reasoning_content: 'greet' }) }).options.messages[1]).toEqual({
      role: 'assistant',
      content: 'Hello',
      reasoning: 'greet',
    });
    expect(job({ messages: messages({ reasoning: 'greet' }) }).options.messages[1]).toEqual({ role: 'assistant', content: 'Hello', reasoning: 'greet' });
    expect(job({ messages: messages({}) }).options.messages[1]).toEqual({ role: 'assistant', content: 'Hello' });
    expect(refusal({ messages: [{ role: 'user', content: 'Hi', reasoning: 'no' }] })).toMatchObject({ param: 'messages[0].reasoning' });
    const plain = { messages: [{ role: 'user', content: 'Hi' }] };
    expect(job({ ...plain, reasoning_effort: 'none' }).options.thinking).toBe(false);
    expect(job({ ...plain, reasoning_effort: 'minimal' }).options.thinking).toBe(false);
    expect(job({ ...plain, reasoning_effort: 'high' }).options.thinking).toBeUndefined();
    expect(job(plain).options.thinking).toBeUndefined();
  });

  it("maps prompt caching: the latest cache breakpoint, as an offset into its message's joined text, and the mode", () => {
    const breakpoint = { mode: 'explicit', ttl: '12h' };
    const messages = [
      { role: 'system', content: [{ type: 'text', text: 'Be brief.', prompt_cache_breakpoint: breakpoint }] },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Once ' },
          { type: 'text', text: 'upon', prompt_cache_breakpoint: breakpoint },
          { type: 'text', text: ' a time?' },
        ],
      },
      { role: 'assistant', content: 'Yes.' },
    ];
    expect(job({ messages }).options.promptCache).toEqual({ implicit: true, breakpoint: { message: 1, offset: 9 } });
    expect(job({ messages, prompt_cache_options: { mode: 'explicit' } }).options.promptCache).toEqual({
      implicit: false,
      breakpoint: { message: 1, offset: 9 },
    });
    expect(job({ messages: [{ role: 'user', content: 'Hi' }], prompt_cache_options: { mode: 'explicit', ttl: '30m' } }).options.promptCache).toEqual({
      implicit: false,
    });
    // The default keeps the shared start, as the worker does without a policy.
    expect(
      job({ messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }], prompt_cache_options: { mode: 'implicit' } }).options.promptCache,
    ).toBeUndefined();
  });

  it('accepts a keyword no grammar enforces when the tool is not strict: a hint, as at OpenAI', () => {
    const parameters = { type: 'object', properties: { s: { type: 'array', uniqueItems: true }, p: { type: 'string', pattern: '^(?!x)y' } } };
    const built = job({ messages: [{ role: 'user', content: 'a' }], tools: [{ type: 'function', function: { name: 'f', parameters } }] });
    expect(built.options.tools?.definitions[0].parameters).toEqual(parameters);
  });

  it('maps response_format and logit_bias, and n above one', () => {
    const built = job({
      messages: [{ role: 'user', content: 'Hi' }],
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', title: 'X', properties: { a: { type: 'integer' } } } } },
      logit_bias: { '42': -100, '7': 3.5 },
      n: 3,
    });
    // The schema travels as sent; the worker builds its grammar with the same checker.
    expect(built.options.responseFormat).toEqual({
      type: 'json_schema',
      name: 'x',
      schema: { type: 'object', title: 'X', properties: { a: { type: 'integer' } } },
    });
    expect(built.options.sampling.logitBias).toEqual([
      { token: 7, bias: 3.5 },
      { token: 42, bias: -100 },
    ]);
    expect(built.options.choices).toBe(3);
  });

  it.each([
    [
      'a tool message answering no earlier call',
      {
        messages: [
          { role: 'user', content: 'a' },
          { role: 'tool', tool_call_id: 'call_9', content: 'x' },
        ],
      },
      'messages[1].tool_call_id',
    ],
    [
      'a tool message before the call it answers',
      {
        messages: [
          { role: 'tool', tool_call_id: 'call_1', content: 'x' },
          { role: 'assistant', tool_calls: [call] },
        ],
      },
      'messages[0].tool_call_id',
    ],
    ['tool_calls on a user message', { messages: [{ role: 'user', content: 'a', tool_calls: [call] }] }, 'messages[0].tool_calls'],
    ['a user message without content', { messages: [{ role: 'user' }] }, 'messages[0].content'],
    ['two tools of one name', { messages: [{ role: 'user', content: 'a' }], tools: [weather, weather] }, 'tools[1].function.name'],
    [
      'parameters that are not an object schema',
      { messages: [{ role: 'user', content: 'a' }], tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'array' } } }] },
      'tools[0].function.parameters',
    ],
    [
      'a keyword no grammar enforces, strict',
      {
        messages: [{ role: 'user', content: 'a' }],
        tools: [
          { type: 'function', function: { name: 'f', strict: true, parameters: { type: 'object', properties: { s: { type: 'array', uniqueItems: true } } } } },
        ],
      },
      'tools[0].function.parameters',
    ],
    [
      'a schema $ref to nothing',
      {
        messages: [{ role: 'user', content: 'a' }],
        tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { s: { $ref: '#/$defs/gone' } } } } }],
      },
      'tools[0].function.parameters',
    ],
    [
      'a tool_choice naming no tool',
      { messages: [{ role: 'user', content: 'a' }], tools: [weather], tool_choice: { type: 'function', function: { name: 'other' } } },
      'tool_choice',
    ],
    [
      'tools with a JSON response_format',
      { messages: [{ role: 'user', content: 'a' }], tools: [weather], response_format: { type: 'json_object' } },
      'response_format',
    ],
  ])('refuses %s', (_what, body, param) => {
    expect(refusal(body)).toMatchObject({ status: 400, param });
  });
});
