import fc from 'fast-check';
import { assertMatchesSchema } from '../support/openai-schema';
import { e2eStack } from '../support/stack-env';

interface Answer {
  status: number;
  body: unknown;
}

/**
 * Request bodies that are valid but for their structure: arbitrary JSON where a message or any
 * field should be, and nesting far deeper than any client sends. (The generated bad input
 * next door breaks several rules per body, so validation always stopped it before the
 * structure mattered; `[[]]` as messages and 2,000 levels of nesting both gave 500s.)
 * No answer may be a 5xx, every error must be OpenAI-shaped, and the service must serve a
 * good request afterwards. The seed is fixed per run (FUZZ_SEED to change it); fast-check
 * prints it with the shrunk counterexample when a property fails.
 */
describe('generated hostile structure', () => {
  const stack = e2eStack();
  const url = `${stack.apiUrls[0]}/chat/completions`;
  const headers = { authorization: `Bearer ${stack.apiKey}`, 'content-type': 'application/json' };
  const seed = Number(process.env.FUZZ_SEED ?? 20261123);
  const base = { model: stack.model, max_tokens: 1, temperature: 0 };
  const goodMessage = { role: 'user', content: 'Hi' };

  async function send(text: string): Promise<Answer> {
    const response = await fetch(url, { method: 'POST', headers, body: text });
    const raw = await response.text();
    if (response.status >= 500) throw new Error(`status ${response.status} for ${text.slice(0, 300)}: ${raw.slice(0, 300)}`);
    if (response.headers.get('content-type')?.startsWith('text/event-stream')) {
      // A valid streamed request (`stream: true` is among the generated values): it must end properly.
      expect(raw.trimEnd().endsWith('data: [DONE]')).toBe(true);
      expect(raw).not.toContain('"error"');
      return { status: response.status, body: undefined };
    }
    const body: unknown = JSON.parse(raw);
    assertMatchesSchema(response.status === 200 ? 'CreateChatCompletionResponse' : 'ErrorResponse', body);
    return { status: response.status, body };
  }

  function errorOf(answer: Answer): { param: string | null; code: string | null } {
    return (answer.body as { error: { param: string | null; code: string | null } }).error;
  }

  const notAnObject = fc.oneof(fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 3 }), fc.constant(null), fc.string(), fc.double(), fc.boolean());
  const anyJson = fc.jsonValue({ maxDepth: 8 });

  it('refuses a message that is not an object with 400 naming that message', async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: 4 }), fc.nat({ max: 4 }), notAnObject, async (before, after, bad) => {
        const messages = [...Array<unknown>(before).fill(goodMessage), bad, ...Array<unknown>(after).fill(goodMessage)];
        const answer = await send(JSON.stringify({ ...base, messages }));
        expect(answer.status).toBe(400);
        expect(errorOf(answer).param).toBe(`messages[${before}]`);
      }),
      { numRuns: 150, seed },
    );
  });

  it('refuses a tool or a tool call that is not an object with 400 naming it', async () => {
    const tool = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: {} } } };
    const call = { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } };
    await fc.assert(
      fc.asyncProperty(fc.boolean(), fc.nat({ max: 2 }), notAnObject, async (inTools, before, bad) => {
        const items = [...Array<unknown>(before).fill(inTools ? tool : call), bad];
        const body = inTools
          ? { ...base, messages: [goodMessage], tools: items }
          : { ...base, messages: [goodMessage, { role: 'assistant', content: null, tool_calls: items }] };
        const answer = await send(JSON.stringify(body));
        expect(answer.status).toBe(400);
        expect(errorOf(answer).param).toBe(inTools ? `tools[${before}]` : `messages[1].tool_calls[${before}]`);
      }),
      { numRuns: 100, seed },
    );
  });

  it('never answers 5xx to arbitrary JSON as a message', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.oneof(anyJson, fc.record({ role: anyJson, content: anyJson }, { requiredKeys: [] })), { minLength: 1, maxLength: 4 }),
        async (messages) => {
          await send(JSON.stringify({ ...base, messages }));
        },
      ),
      { numRuns: 300, seed },
    );
  });

  it('never answers 5xx to arbitrary JSON in any field, known or not', async () => {
    const field = fc.constantFrom(
      'model',
      'messages',
      'max_tokens',
      'temperature',
      'stop',
      'stream',
      'stream_options',
      'seed',
      'n',
      'user',
      'tools',
      'metadata',
      'x_unknown',
    );
    await fc.assert(
      fc.asyncProperty(field, anyJson, async (name, value) => {
        await send(JSON.stringify({ ...base, messages: [goodMessage], [name]: value }));
      }),
      { numRuns: 300, seed },
    );
  });

  /** `value` wrapped in `depth` arrays or objects, chosen level by level. */
  const nested = (depth: number, kinds: boolean[]): string => {
    let text = '1';
    for (let level = 0; level < depth; level++) text = kinds[level % kinds.length] ? `[${text}]` : `{"k":${text}}`;
    return text;
  };
  const place = fc.constantFrom('messages', 'message', 'content', 'stop', 'stream_options', 'metadata', 'x_unknown');

  function bodyWith(where: string, deep: string): string {
    const good = JSON.stringify(goodMessage).slice(0, -1);
    const frame = JSON.stringify(base).slice(0, -1);
    switch (where) {
      case 'messages':
        return `${frame},"messages":${deep}}`;
      case 'message':
        return `${frame},"messages":[${JSON.stringify(goodMessage)},${deep}]}`;
      case 'content':
        return `${frame},"messages":[{"role":"user","content":${deep}}]}`;
      default:
        return `${frame},"messages":[${good}}],"${where}":${deep}}`;
    }
  }

  it('refuses nesting deeper than 64 levels anywhere with 400 nesting_too_deep', async () => {
    await fc.assert(
      fc.asyncProperty(place, fc.integer({ min: 65, max: 20_000 }), fc.array(fc.boolean(), { minLength: 1, maxLength: 5 }), async (where, depth, kinds) => {
        const answer = await send(bodyWith(where, nested(depth, kinds)));
        expect(answer.status).toBe(400);
        expect(errorOf(answer).code).toBe('nesting_too_deep');
      }),
      { numRuns: 150, seed },
    );
  });

  it('never answers 5xx to nesting within the bound', async () => {
    await fc.assert(
      fc.asyncProperty(place, fc.integer({ min: 1, max: 62 }), fc.array(fc.boolean(), { minLength: 1, maxLength: 5 }), async (where, depth, kinds) => {
        await send(bodyWith(where, nested(depth, kinds)));
      }),
      { numRuns: 150, seed },
    );
  });

  it('still answers a good request correctly after all of that', async () => {
    const answer = await send(JSON.stringify({ model: stack.model, messages: [{ role: 'user', content: 'Hello' }], max_tokens: 5 }));
    expect(answer.status).toBe(200);
  });
});
