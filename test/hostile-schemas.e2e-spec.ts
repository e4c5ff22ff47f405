import { STACK_API_KEY, STACK_MODEL, ServiceStack } from './support/service-stack';

type Json = Record<string, unknown>;

/** Schemas built to be expensive: each is refused at admission or answered within a bound. */
const nested = (depth: number): Json =>
  Array.from({ length: depth }).reduce<Json>((inner) => ({ type: 'object', properties: { a: inner }, required: ['a'] }), { type: 'string', maxLength: 3 });
const HOSTILE: Array<[string, Json]> = [
  ['a 20,000-value enum', { type: 'object', properties: { v: { enum: Array.from({ length: 20_000 }, (_, i) => `value-${i}`) } }, required: ['v'] }],
  ['a 1,000-value enum (at the limit)', { type: 'object', properties: { v: { enum: Array.from({ length: 1000 }, (_, i) => `value-${i}`) } }, required: ['v'] }],
  ['3,000 branches', { type: 'object', properties: { v: { anyOf: Array.from({ length: 3000 }, (_, i) => ({ const: i })) } }, required: ['v'] }],
  [
    '256 branches (at the limit)',
    {
      type: 'object',
      properties: {
        v: { anyOf: Array.from({ length: 256 }, (_, i) => ({ type: 'object', properties: { [`k${i}`]: { type: 'integer' } }, required: [`k${i}`] })) },
      },
      required: ['v'],
    },
  ],
  ['6,000 properties', { type: 'object', properties: Object.fromEntries(Array.from({ length: 6000 }, (_, i) => [`p${i}`, { type: 'integer' }])) }],
  ['nesting 200 deep', nested(200)],
  ['nesting 30 deep', nested(30)],
  [
    'a $ref cycle',
    { type: 'object', properties: { v: { $ref: '#/$defs/a' } }, required: ['v'], $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } } },
  ],
  ['a required self-reference', { type: 'object', properties: { next: { $ref: '#' } }, required: ['next'] }],
  ['a $ref to nothing', { type: 'object', properties: { v: { $ref: '#/$defs/missing' } } }],
  ['a catastrophic pattern', { type: 'object', properties: { v: { type: 'string', pattern: '^(a+)+$' } }, required: ['v'] }],
  ['an ambiguous pattern', { type: 'object', properties: { v: { type: 'string', pattern: '^(a|aa|a?a)*b$' } }, required: ['v'] }],
  ['a huge-repeat pattern', { type: 'object', properties: { v: { type: 'string', pattern: '^(ab){1000}(cd){1000}$' } }, required: ['v'] }],
  ['a minLength of 1,000,000', { type: 'object', properties: { v: { type: 'string', minLength: 1_000_000 } }, required: ['v'] }],
  ['a maxLength of 100,000', { type: 'object', properties: { v: { type: 'string', maxLength: 100_000 } }, required: ['v'] }],
  ['minItems 50,000', { type: 'object', properties: { v: { type: 'array', items: { type: 'integer' }, minItems: 50_000 } }, required: ['v'] }],
  ['a 1e300 range', { type: 'object', properties: { v: { type: 'number', minimum: -1e300, maximum: 1e300, multipleOf: 1e-300 } }, required: ['v'] }],
];

/**
 * Hostile schemas, in tools and in response_format: each is refused with a shaped 400 or
 * answered within a bound, nothing answers 500, and plain requests sent meanwhile keep their
 * latency (one request's grammar must not stall the worker's other sequences).
 */
describe('hostile schemas', () => {
  let stack: ServiceStack;

  beforeAll(async () => {
    // A context that holds the largest schemas allowed (a tool's schema is in the prompt).
    stack = await ServiceStack.start({ name: 'hostile-schemas', parallelSequences: 3, workerEnv: { CONTEXT_SIZE: '32768' } });
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
  });

  async function post(body: Json): Promise<{ status: number; body: Json; ms: number }> {
    const started = performance.now();
    const response = await fetch(`${stack.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${STACK_API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: STACK_MODEL, max_tokens: 48, seed: 1, messages: [{ role: 'user', content: 'Go.' }], ...body }),
      signal: AbortSignal.timeout(60_000),
    });
    return { status: response.status, body: (await response.json()) as Json, ms: performance.now() - started };
  }

  const plain = async (): Promise<number> => (await post({ max_tokens: 16 })).ms;
  const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

  it('refuses each with a 400 naming the field, or answers it within 30 s; plain requests keep their latency', async () => {
    const alone: number[] = [];
    for (let i = 0; i < 6; i++) alone.push(await plain());

    // Plain requests, one after another, for as long as the hostile ones run.
    let hostileDone = false;
    const during: number[] = [];
    const plainLoop = (async () => {
      while (!hostileDone) during.push(await plain());
    })();

    const outcomes: string[] = [];
    try {
      for (const [name, schema] of HOSTILE) {
        const asFormat = { response_format: { type: 'json_schema', json_schema: { name: 'hostile', schema } } };
        const asTool = { tools: [{ type: 'function', function: { name: 'hostile', parameters: schema } }], tool_choice: 'required' };
        for (const [where, body, param] of [
          ['response_format', asFormat, 'response_format'],
          ['tools', asTool, 'tools[0].function.parameters'],
        ] as const) {
          const { status, body: answer, ms } = await post(body);
          const error = answer.error as Json | undefined;
          if (status === 400) {
            // The body's depth guard may answer first, naming the outer field.
            expect({ name, where, type: error?.type, param: param.startsWith(String(error?.param)) }).toEqual({
              name,
              where,
              type: 'invalid_request_error',
              param: true,
            });
            expect(String(error?.message)).toMatch(/schema|nested/i);
          } else {
            expect({ name, where, status }).toEqual({ name, where, status: 200 });
            expect(ms).toBeLessThan(30_000);
          }
          outcomes.push(`${where} ${name}: ${status} in ${Math.round(ms)} ms${status === 400 ? ` (${String(error?.message).slice(0, 90)})` : ''}`);
        }
      }
    } finally {
      hostileDone = true;
      await plainLoop;
      console.log(outcomes.join('\n'));
    }
    console.log(`plain p50 alone ${Math.round(median(alone))} ms, during ${Math.round(median(during))} ms (${during.length} requests)`);
    expect(during.length).toBeGreaterThan(3);
    expect(median(during)).toBeLessThan(median(alone) * 4 + 500);
  }, 600_000);
});
