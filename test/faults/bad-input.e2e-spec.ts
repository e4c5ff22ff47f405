import fc from 'fast-check';
import { assertMatchesSchema } from '../support/openai-schema';
import { e2eStack } from '../support/stack-env';

/**
 * Thousands of generated request bodies: malformed JSON, wrong types, out-of-range numbers,
 * odd unicode, deep nesting, unknown fields. Every answer must be a 4xx in OpenAI's shape, never
 * a 5xx, and the service must answer a good request correctly afterwards.
 */
describe('generated bad input', () => {
  const stack = e2eStack();
  const url = `${stack.apiUrls[0]}/chat/completions`;
  const headers = { authorization: `Bearer ${stack.apiKey}`, 'content-type': 'application/json' };

  const oddString = fc.oneof(
    fc.string(),
    fc.string({ unit: 'grapheme' }),
    fc.string({ unit: 'binary' }),
    fc.constantFrom('', '\u0000', '\uD800', '\u202E', '💥'.repeat(50), 'a'.repeat(5000), '{"a":', '__proto__', 'constructor'),
  );
  const anyJson = fc.jsonValue({ maxDepth: 4 });
  const badNumber = fc.oneof(fc.double({ noNaN: true }), fc.integer(), fc.constantFrom(-1, 0, 2.5, 1e308, -1e308), oddString, fc.boolean(), fc.constant(null));
  const badMessage = fc.oneof(
    anyJson,
    fc.record({ role: fc.oneof(oddString, anyJson), content: fc.oneof(oddString, anyJson) }, { requiredKeys: [] }),
    fc.record({ role: fc.constantFrom('user', 'system', 'assistant', 'tool', 'function'), content: fc.oneof(anyJson, fc.array(anyJson)) }),
  );
  // Each body breaks at least one rule; a valid request would start a real generation.
  const badBody = fc.oneof(
    fc.record(
      {
        model: fc.oneof(fc.constant(stack.model), oddString, anyJson),
        messages: fc.oneof(fc.array(badMessage, { maxLength: 5 }), anyJson),
        temperature: badNumber,
        top_p: badNumber,
        max_tokens: fc.oneof(badNumber, fc.integer({ max: 0 })),
        stop: fc.oneof(fc.array(oddString, { minLength: 5, maxLength: 8 }), anyJson),
        stream: fc.oneof(oddString, fc.integer()),
        n: fc.integer({ min: 2, max: 10 }),
        [`x_${'unknown'}`]: anyJson,
      },
      { requiredKeys: ['n'] },
    ),
    fc.dictionary(oddString, anyJson).filter((body) => !('messages' in body) || !('model' in body)),
  );
  const badText = fc.oneof(
    badBody.map((body) => JSON.stringify(body)),
    oddString.filter((text) => {
      try {
        JSON.parse(text);
        return false;
      } catch {
        return true;
      }
    }),
    badBody.map((body) => JSON.stringify(body).slice(0, -1)),
  );

  it('answers every generated bad body with an OpenAI-shaped 4xx', async () => {
    await fc.assert(
      fc.asyncProperty(badText, async (body) => {
        const response = await fetch(url, { method: 'POST', headers, body });
        const text = await response.text();
        if (response.status < 400 || response.status >= 500) throw new Error(`status ${response.status} for ${body.slice(0, 300)}: ${text.slice(0, 300)}`);
        assertMatchesSchema('ErrorResponse', JSON.parse(text));
      }),
      { numRuns: 2000, seed: 20261122 },
    );
  });

  it('still answers a good request correctly after all of that', async () => {
    const response = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ model: stack.model, messages: [{ role: 'user', content: 'Hello' }], max_tokens: 5 }),
    });
    expect(response.status).toBe(200);
    assertMatchesSchema('CreateChatCompletionResponse', await response.json());
  });
});
