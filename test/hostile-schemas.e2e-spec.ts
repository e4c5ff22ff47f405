import { HOSTILE } from './support/hostile-schemas';
import type { Json } from './support/hostile-schemas';
import { STACK_API_KEY, STACK_MODEL, ServiceStack } from './support/service-stack';

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
