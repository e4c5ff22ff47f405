import type { JsonValue } from '@app/contracts';
import { schemaGrammar } from './schema-grammar';
import { shortestLength } from './grammar-ast';
import { accepts, rulesOf } from './schema-grammar.fixtures';

describe('schemaGrammar: refusals', () => {
  it.each<[string, JsonValue, { kind: string; keyword: string }]>([
    ['a $ref to nothing', { type: 'object', properties: { a: { $ref: '#/$defs/missing' } } }, { kind: 'invalid', keyword: '$ref' }],
    ['a $ref outside the schema', { $ref: 'https://example.com/schema.json' }, { kind: 'invalid', keyword: '$ref' }],
    [
      'a $ref cycle with no way out',
      { $ref: '#/$defs/a', $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } } },
      { kind: 'invalid', keyword: '$ref' },
    ],
    ['a required self-reference', { type: 'object', properties: { next: { $ref: '#' } }, required: ['next'] }, { kind: 'invalid', keyword: '$ref' }],
    ['an invalid pattern', { type: 'string', pattern: '^[a-z$' }, { kind: 'invalid', keyword: 'pattern' }],
    ['a pattern with counts out of order', { type: 'string', pattern: '^a{3,1}$' }, { kind: 'invalid', keyword: 'pattern' }],
    ['bounds nothing satisfies', { type: 'integer', minimum: 5, maximum: 4 }, { kind: 'invalid', keyword: 'minimum' }],
    ['a huge enum', { enum: Array.from({ length: 20_000 }, (_, i) => i) }, { kind: 'limit', keyword: 'enumValues' }],
    ['thousands of branches', { anyOf: Array.from({ length: 3000 }, (_, i) => ({ const: i })) }, { kind: 'limit', keyword: 'branches' }],
    [
      'deep nesting',
      Array.from({ length: 100 }).reduce<JsonValue>((inner) => ({ type: 'array', items: inner }), { type: 'string' }),
      { kind: 'limit', keyword: 'nesting' },
    ],
    ['a huge length', { type: 'string', minLength: 1_000_000 }, { kind: 'limit', keyword: 'repetition' }],
    ['a huge repeat in a pattern', { type: 'string', pattern: '^a{100000}$' }, { kind: 'limit', keyword: 'pattern' }],
    ['nested repeats in a pattern', { type: 'string', pattern: '^((((a+)+)+)+)$' }, { kind: 'limit', keyword: 'pattern' }],
    [
      'thousands of properties',
      { type: 'object', properties: Object.fromEntries(Array.from({ length: 6000 }, (_, i) => [`p${i}`, { type: 'string' }])) },
      { kind: 'limit', keyword: 'properties' },
    ],
    ['a huge schema', { type: 'string', description: 'x'.repeat(300_000) }, { kind: 'limit', keyword: 'size' }],
    ['a shortest value of 100,001 characters', { type: 'array', items: { type: 'integer' }, minItems: 50_000 }, { kind: 'limit', keyword: 'shortestValue' }],
  ])('refuses %s, strict or not', (_what, schema, problem) => {
    for (const strict of [true, false]) {
      const built = schemaGrammar(schema, { strict });
      expect(built.ok).toBe(false);
      if (!built.ok) expect(built.problem).toMatchObject(problem);
    }
  });

  it('enforces oneOf only where its alternatives exclude each other, else refuses it when strict', () => {
    const overlapping: JsonValue = {
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
    };
    expect(schemaGrammar(overlapping, { strict: true })).toMatchObject({
      ok: false,
      problem: { kind: 'unsupported', keyword: 'oneOf', path: '$.properties.v.oneOf' },
    });
    const hint = schemaGrammar(overlapping, { strict: false });
    expect(hint.ok && hint.ignored.map((problem) => problem.path)).toEqual(['$.properties.v.oneOf']);
    // Untyped alternatives match values of every type: they cannot be told apart.
    expect(schemaGrammar({ oneOf: [{ minimum: 1 }, { type: 'string' }] }, { strict: true }).ok).toBe(false);

    const exclusive: Array<[string, JsonValue]> = [
      ['types', { oneOf: [{ type: 'string' }, { type: 'integer' }, { type: ['boolean', 'null'] }] }],
      ['const and enum values', { oneOf: [{ const: 'a' }, { enum: ['b', 'c'] }, { type: 'integer' }] }],
      [
        'a discriminating property behind $ref',
        {
          oneOf: [{ $ref: '#/$defs/page' }, { type: 'object', properties: { kind: { const: 'workspace' } }, required: ['kind'] }],
          $defs: { page: { type: 'object', properties: { kind: { const: 'page' }, id: { type: 'string' } }, required: ['kind', 'id'] } },
        },
      ],
    ];
    for (const [what, schema] of exclusive) expect({ what, ok: schemaGrammar(schema, { strict: true }).ok }).toEqual({ what, ok: true });
    expect(schemaGrammar({ oneOf: [{ enum: ['a', 'b'] }, { const: 'b' }] }, { strict: true }).ok).toBe(false);
    expect(schemaGrammar({ oneOf: [{ type: 'number' }, { type: 'integer' }] }, { strict: true }).ok).toBe(false);
  });

  it('measures the shortest value a schema allows, through counts, choices and $ref cycles', () => {
    const shortest = (schema: JsonValue) => shortestLength(rulesOf(schema));
    expect(shortest({ type: 'string', minLength: 5 })).toBe(7);
    expect(shortest({ type: 'array', items: { type: 'integer' }, minItems: 3 })).toBe('[0,0,0]'.length);
    expect(shortest({ anyOf: [{ type: 'string', minLength: 9 }, { type: 'boolean' }] })).toBe('true'.length);
    expect(shortest({ type: 'object', properties: { next: { $ref: '#' } } })).toBe('{}'.length);
    expect(shortest({ type: 'object', properties: { v: { type: 'string', pattern: '^(ab){1000}$' } }, required: ['v'] })).toBe('{"v":""}'.length + 2000);
  });

  it("reads draft 4's boolean exclusive bounds", () => {
    const schema = { type: 'integer', minimum: 1, exclusiveMinimum: true, maximum: 3, exclusiveMaximum: true };
    expect([0, 1, 2, 3].map((n) => accepts(schema, n))).toEqual([false, false, true, false]);
  });

  it('refuses what it cannot enforce only when strict, naming the keyword and path', () => {
    const schema = {
      type: 'object',
      properties: { tags: { type: 'array', items: { type: 'string' }, uniqueItems: true }, code: { type: 'string', pattern: '^(?!x)[a-z]+$' } },
      required: ['tags', 'code'],
    };
    const strict = schemaGrammar(schema, { strict: true });
    expect(strict).toMatchObject({ ok: false, problem: { kind: 'unsupported', keyword: 'uniqueItems', path: '$.properties.tags.uniqueItems' } });
    const hint = schemaGrammar(schema, { strict: false });
    expect(hint.ok).toBe(true);
    if (hint.ok) expect(hint.ignored.map((problem) => problem.keyword)).toEqual(['uniqueItems', 'pattern']);
    const lookBehind = schemaGrammar({ type: 'string', pattern: '^(?<=a)b$' }, { strict: true });
    expect(lookBehind.ok ? '' : `${lookBehind.problem.keyword}: ${lookBehind.problem.message}`).toMatch(/^pattern: .*look-behind/);
  });
});
