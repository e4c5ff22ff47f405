import { e2eStack } from './support/stack-env';
import { assertMatchesSchema } from './support/openai-schema';
import { postOversized } from './support/oversized-post';

/** Raw HTTP, so the tests see status, headers and body exactly as any client would. */
describe('request errors in OpenAI shape', () => {
  const stack = e2eStack();
  const [baseUrl] = stack.apiUrls;
  const url = `${baseUrl}/chat/completions`;
  const valid = { model: stack.model, messages: [{ role: 'user', content: 'Hello' }], max_tokens: 2 };

  async function post(body: string, headers: Record<string, string> = {}) {
    const response = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.apiKey}`, 'content-type': 'application/json', ...headers },
      body,
    });
    const json = (await response.json()) as { error: { message: string; type: string; param: string | null; code: string | null } };
    assertMatchesSchema('ErrorResponse', json);
    return { status: response.status, error: json.error };
  }

  const invalid: Array<[string, Record<string, unknown>, string]> = [
    ['temperature above 2', { temperature: 2.5 }, 'temperature'],
    ['temperature below 0', { temperature: -0.1 }, 'temperature'],
    ['temperature as a string', { temperature: '1' }, 'temperature'],
    ['top_p above 1', { top_p: 1.5 }, 'top_p'],
    ['max_tokens of 0', { max_tokens: 0 }, 'max_tokens'],
    ['max_tokens not an integer', { max_tokens: 2.5 }, 'max_tokens'],
    ['max_completion_tokens negative', { max_completion_tokens: -1 }, 'max_completion_tokens'],
    ['frequency_penalty beyond 2', { frequency_penalty: 3 }, 'frequency_penalty'],
    ['presence_penalty beyond -2', { presence_penalty: -2.5 }, 'presence_penalty'],
    ['stream as a string', { stream: 'yes' }, 'stream'],
    ['five stop sequences', { stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop'],
    ['a stop sequence that is not a string', { stop: [1] }, 'stop'],
    ['a stop sequence with half of a character', { stop: ['\uDE00b'] }, 'stop'],
    ['n of 9', { n: 9 }, 'n'],
    ['n of 0', { n: 0 }, 'n'],
    ['seed not an integer', { seed: 1.5 }, 'seed'],
    ['model missing', { model: undefined }, 'model'],
    ['model not a string', { model: 5 }, 'model'],
    ['messages missing', { messages: undefined }, 'messages'],
    ['messages empty', { messages: [] }, 'messages'],
    ['messages not an array', { messages: 'hello' }, 'messages'],
    ['a message that is not an object', { messages: ['hello'] }, 'messages[0]'],
    ['an unknown role', { messages: [{ role: 'robot', content: 'hi' }] }, 'messages[0].role'],
    ['content missing', { messages: [{ role: 'user' }] }, 'messages[0].content'],
    ['content a number', { messages: [{ role: 'user', content: 42 }] }, 'messages[0].content'],
    ['an image content part', { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] }, 'messages[0].content'],
    [
      'a cache breakpoint of an unknown mode',
      { messages: [{ role: 'user', content: [{ type: 'text', text: 'a', prompt_cache_breakpoint: { mode: 'implicit' } }] }] },
      'messages[0].content',
    ],
    [
      'a cache breakpoint of an unknown ttl',
      { messages: [{ role: 'user', content: [{ type: 'text', text: 'a', prompt_cache_breakpoint: { mode: 'explicit', ttl: '1h' } }] }] },
      'messages[0].content',
    ],
    ['prompt_cache_options of an unknown mode', { prompt_cache_options: { mode: 'always' } }, 'prompt_cache_options.mode'],
    ['prompt_cache_options of an unknown ttl', { prompt_cache_options: { ttl: '12h' } }, 'prompt_cache_options.ttl'],
    [
      'a system message after the first',
      {
        messages: [
          { role: 'user', content: 'a' },
          { role: 'system', content: 'b' },
        ],
      },
      'messages[1].role',
    ],
    ['an unknown message field', { messages: [{ role: 'user', content: 'a', tool_call_id: 'x' }] }, 'messages[0].tool_call_id'],
    ['a tool without a name', { tools: [{ type: 'function', function: { description: 'no name' } }] }, 'tools[0].function.name'],
    ['a tool name OpenAI would refuse', { tools: [{ type: 'function', function: { name: 'has space' } }] }, 'tools[0].function.name'],
    [
      'tool parameters that are not an object schema',
      { tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'string' } } }] },
      'tools[0].function.parameters',
    ],
    [
      'a tool_choice naming no tool',
      { tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: { type: 'function', function: { name: 'g' } } },
      'tool_choice',
    ],
    ['tool_choice without tools', { tool_choice: 'required' }, 'tool_choice'],
    [
      'a tool message answering no call',
      {
        messages: [
          { role: 'user', content: 'a' },
          { role: 'tool', tool_call_id: 'call_x', content: '1' },
        ],
      },
      'messages[1].tool_call_id',
    ],
    [
      'a tool message without its call id',
      {
        messages: [
          { role: 'user', content: 'a' },
          { role: 'tool', content: '1' },
        ],
      },
      'messages[1].tool_call_id',
    ],
    ['an assistant message with neither content nor calls', { messages: [{ role: 'user', content: 'a' }, { role: 'assistant' }] }, 'messages[1].content'],
    ['a response_format of an unknown type', { response_format: { type: 'yaml' } }, 'response_format'],
    [
      'a strict schema keyword a grammar cannot enforce',
      {
        response_format: {
          type: 'json_schema',
          json_schema: { name: 'x', strict: true, schema: { type: 'object', properties: { n: { type: 'array', uniqueItems: true } } } },
        },
      },
      'response_format',
    ],
    [
      'a strict tool keyword a grammar cannot enforce',
      { tools: [{ type: 'function', function: { name: 'f', strict: true, parameters: { type: 'object', not: { required: ['a'] } } } }] },
      'tools[0].function.parameters',
    ],
    [
      'a schema $ref to nothing',
      { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', properties: { a: { $ref: '#/$defs/gone' } } } } } },
      'response_format',
    ],
    [
      'a schema over a limit',
      {
        tools: [
          { type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { enum: Array.from({ length: 2000 }, (_, i) => i) } } } } },
        ],
      },
      'tools[0].function.parameters',
    ],
    ['metadata that is not string pairs', { metadata: { a: 1 } }, 'metadata'],
    ['a modality other than text', { modalities: ['audio'] }, 'modalities'],
    ['a logit_bias beyond 100', { logit_bias: { '1': 101 } }, 'logit_bias'],
    ['a logit_bias key that is not a token id', { logit_bias: { a: 1 } }, 'logit_bias'],
    ['a logit_bias token the model does not have', { logit_bias: { '99999999': 1 } }, 'logit_bias'],
    ['a field OpenAI does not have', { temprature: 1 }, 'temprature'],
    ['stream_options.include_usage not a boolean', { stream: true, stream_options: { include_usage: 'yes' } }, 'stream_options.include_usage'],
  ];

  it.each(invalid)('400 for %s, naming `%s`', async (_name, change, param) => {
    const { status, error } = await post(JSON.stringify({ ...valid, ...change }));
    expect(status).toBe(400);
    expect(error.type).toBe('invalid_request_error');
    expect(error.param).toBe(param);
    expect(error.message.length).toBeGreaterThan(10);
  });

  it('400 for malformed JSON', async () => {
    const { status, error } = await post('{"model": "tiny-chat", "messages": [');
    expect(status).toBe(400);
    expect(error.type).toBe('invalid_request_error');
    expect(error.message).toMatch(/JSON/);
  });

  it.each([['null'], ['[]'], ['"text"'], ['42']])('400 for a JSON body that is not an object: %s', async (body) => {
    const { status, error } = await post(body);
    expect(status).toBe(400);
    expect(error.type).toBe('invalid_request_error');
  });

  it('401 without an API key', async () => {
    const { status, error } = await post(JSON.stringify(valid), { authorization: '' });
    expect(status).toBe(401);
    expect(error.type).toBe('invalid_request_error');
  });

  it('401 with a wrong API key, without echoing it', async () => {
    const { status, error } = await post(JSON.stringify(valid), { authorization: 'Bearer sk-not-the-right-key' });
    expect(status).toBe(401);
    expect(error.code).toBe('invalid_api_key');
    expect(error.message).not.toContain('sk-not-the-right-key');
  });

  it('401 on /v1/models too', async () => {
    const response = await fetch(`${baseUrl}/models`);
    expect(response.status).toBe(401);
    assertMatchesSchema('ErrorResponse', await response.json());
  });

  it('404 model_not_found for an unknown model', async () => {
    const { status, error } = await post(JSON.stringify({ ...valid, model: 'no-such-model' }));
    expect(status).toBe(404);
    expect(error.code).toBe('model_not_found');
    expect(error.param).toBe('model');
  });

  it('still answers correctly after all of that', async () => {
    const response = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(valid),
    });
    expect(response.status).toBe(200);
    assertMatchesSchema('CreateChatCompletionResponse', await response.json());
  });
});

describe('bounded request bodies', () => {
  const stack = e2eStack();

  it('413 in OpenAI shape for a body over the limit, and the service keeps serving', async () => {
    const { status, body } = await postOversized(
      `${stack.apiUrls[0]}/chat/completions`,
      { authorization: `Bearer ${stack.apiKey}`, 'content-type': 'application/json' },
      2 * 1024 * 1024,
    );
    expect(status).toBe(413);
    const json = JSON.parse(body) as { error: { type: string; code: string } };
    assertMatchesSchema('ErrorResponse', json);
    expect(json.error.code).toBe('request_too_large');

    const models = await fetch(`${stack.apiUrls[0]}/models`, { headers: { authorization: `Bearer ${stack.apiKey}` } });
    expect(models.status).toBe(200);
  });

  async function post(body: unknown) {
    const response = await fetch(`${stack.apiUrls[0]}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const json = (await response.json()) as { error: { param: string | null; code: string | null } };
    assertMatchesSchema('ErrorResponse', json);
    return { status: response.status, error: json.error };
  }

  it('413 naming `messages` for more messages than the service takes', async () => {
    const messages = Array.from({ length: 2049 }, () => ({ role: 'user', content: 'hi' }));
    const { status, error } = await post({ model: stack.model, messages });
    expect(status).toBe(413);
    expect(error).toMatchObject({ param: 'messages', code: 'request_too_large' });
  });

  it('413 naming the message whose content is too long', async () => {
    const messages = [
      { role: 'user', content: 'short' },
      { role: 'user', content: 'y'.repeat(300 * 1024) },
    ];
    const { status, error } = await post({ model: stack.model, messages });
    expect(status).toBe(413);
    expect(error).toMatchObject({ param: 'messages[1].content', code: 'request_too_large' });
  });
});
