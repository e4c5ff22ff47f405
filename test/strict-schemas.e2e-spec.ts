import Ajv2020 from 'ajv/dist/2020';
import { HOSTILE } from './support/hostile-schemas';
import type { Json } from './support/hostile-schemas';
import { STACK_API_KEY, ServiceStack } from './support/service-stack';
import { e2eStack } from './support/stack-env';

const SEEDS = Array.from({ length: 20 }, (_, index) => index + 1);
/** Beside the hard schemas: a oneOf whose branches both match 4, which strict mode must refuse. */
const OVERLAPPING_ONE_OF: [string, Json] = [
  'an overlapping oneOf',
  {
    type: 'object',
    properties: {
      v: {
        oneOf: [
          { type: 'integer', minimum: 0 },
          { type: 'integer', maximum: 10 },
        ],
      },
    },
    required: ['v'],
  },
];

/**
 * The hard schemas as strict response formats, through both engines: the llama worker, and a
 * worker of a second deployment with ENGINE=openai whose upstream is the first. Each is refused
 * with a 400 naming response_format, or enforced: over 20 seeds every answer ends by itself and
 * satisfies the schema.
 */
describe('strict hard schemas, through both engines', () => {
  const stack = e2eStack();
  // multipleOf by rounding, as JSON Schema defines it (the quotient is a whole number): ajv's own
  // check parses the quotient's text, and calls 4 no multiple of 1e-300 (4e300 reads as 4).
  const ajv = new Ajv2020({ strict: false, multipleOfPrecision: 9 });
  let front: ServiceStack;

  beforeAll(async () => {
    front = await ServiceStack.start({ name: 'strict-schemas-front', workers: 0, models: [stack.model] });
    await front.addWorker(
      { ENGINE: 'openai', UPSTREAM_BASE_URL: stack.apiUrls[0], UPSTREAM_API_KEY: stack.apiKey, UPSTREAM_MAX_CONCURRENCY: '2' },
      stack.model,
    );
  }, 60_000);
  afterAll(() => front?.stop());

  const engines = () => [
    { engine: 'llama', baseUrl: stack.apiUrls[0], key: stack.apiKey },
    { engine: 'openai', baseUrl: front.baseUrl, key: STACK_API_KEY },
  ];

  async function post(baseUrl: string, key: string, schema: Json, seed: number): Promise<{ status: number; body: Json }> {
    const response = await fetch(`${baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: stack.model,
        seed,
        // The huge-repeat pattern's shortest value is 4,006 characters, one token each here.
        max_tokens: 4064,
        messages: [{ role: 'user', content: 'Go.' }],
        response_format: { type: 'json_schema', json_schema: { name: 'hard', schema, strict: true } },
      }),
      signal: AbortSignal.timeout(60_000),
    });
    return { status: response.status, body: (await response.json()) as Json };
  }

  it.each([...HOSTILE, OVERLAPPING_ONE_OF])(
    '%s: refused naming response_format, or enforced over 20 seeds',
    async (name, schema) => {
      for (const { engine, baseUrl, key } of engines()) {
        const first = await post(baseUrl, key, schema, SEEDS[0]);
        if (first.status === 400) {
          const error = first.body.error as Json;
          // The body's depth guard may answer first, naming the outer field.
          expect({ engine, type: error.type, param: 'response_format'.startsWith(String(error.param)) }).toEqual({
            engine,
            type: 'invalid_request_error',
            param: true,
          });
          continue;
        }
        const validate = ajv.compile(schema);
        const wrong: string[] = [];
        for (const seed of SEEDS) {
          const { status, body } = seed === SEEDS[0] ? first : await post(baseUrl, key, schema, seed);
          const [choice] = (body.choices ?? []) as Array<{ finish_reason: string; message: { content: string } }>;
          let valid = false;
          try {
            valid = status === 200 && choice.finish_reason === 'stop' && validate(JSON.parse(choice.message.content));
          } catch {
            // not JSON: counted below
          }
          if (!valid) wrong.push(`${engine} seed ${seed}: ${status} ${choice?.finish_reason} ${String(choice?.message.content).slice(0, 120)}`);
        }
        expect({ name, wrong }).toEqual({ name, wrong: [] });
      }
    },
    // The huge-repeat pattern is 40 answers of over 4,000 grammar-constrained tokens: on a busy
    // 2-core machine that passed 300 s (on this commit and the one before it alike).
    900_000,
  );
});
