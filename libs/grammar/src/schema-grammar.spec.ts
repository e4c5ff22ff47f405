import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import { z } from 'zod';
import type { JsonValue } from '@app/contracts';
import { grammarAccepts, sampleGrammar } from './grammar-sampler';
import { schemaGrammar } from './schema-grammar';
import { shortestLength } from './grammar-ast';
import type { Rules } from './grammar-ast';

const ajv = addFormats(new Ajv2020({ strict: false, allErrors: false }));

function rulesOf(schema: JsonValue, strict = true): Rules {
  const built = schemaGrammar(schema, { strict });
  if (!built.ok) throw new Error(`refused: ${built.problem.message}`);
  return built.rules;
}

/** Seeded uniform numbers, so a failing sample can be found again. */
function seeded(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
}

/** Every sample of the schema's grammar parses as JSON that the schema accepts (ajv with formats). */
function expectSamplesValid(schema: JsonValue, count = 200, strict = true): unknown[] {
  const rules = rulesOf(schema, strict);
  const validate = ajv.compile(schema as object);
  const values: unknown[] = [];
  for (let seed = 1; seed <= count; seed++) {
    const text = sampleGrammar(rules, seeded(seed));
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new Error(`sample ${seed} is not JSON: ${text}`);
    }
    if (!validate(value)) throw new Error(`sample ${seed} breaks the schema: ${text} (${ajv.errorsText(validate.errors)})`);
    values.push(value);
  }
  return values;
}

const accepts = (schema: JsonValue, value: unknown): boolean => grammarAccepts(rulesOf(schema), JSON.stringify(value));

describe('schemaGrammar: every keyword yields a grammar whose samples satisfy the schema', () => {
  it.each<[string, JsonValue]>([
    ['minimum / maximum (integer)', { type: 'integer', minimum: -40, maximum: 1234 }],
    ['exclusiveMinimum / exclusiveMaximum (integer)', { type: 'integer', exclusiveMinimum: 0, exclusiveMaximum: 100 }],
    ['minimum / maximum (number)', { type: 'number', minimum: -2.5, maximum: 7 }],
    ['exclusiveMinimum (number, zod .positive())', { type: 'number', exclusiveMinimum: 0 }],
    ['exclusiveMaximum (number)', { type: 'number', exclusiveMaximum: -3 }],
    ['multipleOf (integer, bounded)', { type: 'integer', multipleOf: 5, minimum: 10, maximum: 95 }],
    ['multipleOf (integer, unbounded)', { type: 'integer', multipleOf: 7 }],
    ['multipleOf (integer, non-negative)', { type: 'integer', multipleOf: 3, minimum: 0 }],
    ['multipleOf 0.01 (number: whole numbers, which validators agree on)', { type: 'number', multipleOf: 0.01, minimum: 0, maximum: 5 }],
    ['pattern', { type: 'string', pattern: '^[A-Z]{2,3}-\\d{4}$' }],
    ['pattern (unanchored search)', { type: 'string', pattern: 'ab+c' }],
    ['pattern (alternation, groups, classes)', { type: 'string', pattern: '^(?:foo|ba[rz])(?<n>\\.[^\\s"\\\\]{1,3})*$' }],
    ['pattern (escapes that JSON escapes)', { type: 'string', pattern: '^["\\\\\\n\\t]{1,4}$' }],
    ['pattern with minLength / maxLength', { type: 'string', pattern: '^[a-z0-9-]+$', minLength: 3, maxLength: 8 }],
    ...(['date-time', 'date', 'time', 'duration', 'email', 'hostname', 'ipv4', 'ipv6', 'uri', 'uuid'] as const).map((format): [string, JsonValue] => [
      `format: ${format}`,
      { type: 'string', format },
    ]),
    ['format: int32', { type: 'integer', format: 'int32' }],
    ['format: int64', { type: 'integer', format: 'int64' }],
    ['minLength / maxLength', { type: 'string', minLength: 2, maxLength: 5 }],
    ['minItems / maxItems', { type: 'array', items: { type: 'boolean' }, minItems: 1, maxItems: 3 }],
    ['prefixItems', { type: 'array', prefixItems: [{ type: 'string' }, { type: 'integer' }], minItems: 1, items: false }],
    ['enum', { enum: ['red', 'green', 'blue', 1, null, { a: [1] }] }],
    ['a large enum (a trie)', { type: 'string', enum: Array.from({ length: 500 }, (_, i) => `item-${i}`) }],
    ['const', { const: 'fixed "value"' }],
    [
      'anyOf',
      {
        anyOf: [
          { type: 'string', maxLength: 3 },
          { type: 'integer', minimum: 5 },
        ],
      },
    ],
    [
      'oneOf (a discriminated union, as zod 4 writes it)',
      {
        oneOf: [
          {
            type: 'object',
            properties: { kind: { type: 'string', const: 'circle' }, radius: { type: 'number', exclusiveMinimum: 0 } },
            required: ['kind', 'radius'],
            additionalProperties: false,
          },
          {
            type: 'object',
            properties: { kind: { type: 'string', const: 'square' }, side: { type: 'integer', minimum: 1 } },
            required: ['kind', 'side'],
            additionalProperties: false,
          },
        ],
      },
    ],
    [
      'anyOf beside properties',
      {
        type: 'object',
        properties: { a: { type: 'string' }, b: { type: 'integer' } },
        anyOf: [{ required: ['a'] }, { required: ['b'] }],
        additionalProperties: false,
      },
    ],
    [
      'allOf of objects',
      {
        allOf: [
          { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] },
          { type: 'object', properties: { b: { type: 'integer', maximum: 3 } }, required: ['b'] },
        ],
      },
    ],
    [
      'propertyNames (z.record)',
      { type: 'object', propertyNames: { type: 'string', pattern: '^[a-z]{1,4}$' }, additionalProperties: { type: 'integer', minimum: 0 } },
    ],
    [
      'additionalProperties with a schema',
      { type: 'object', properties: { id: { type: 'string' } }, required: ['id'], additionalProperties: { type: 'boolean' } },
    ],
    [
      '$ref / $defs with recursion',
      {
        $ref: '#/$defs/node',
        $defs: {
          node: {
            type: 'object',
            properties: { value: { type: 'integer' }, children: { type: 'array', items: { $ref: '#/$defs/node' }, maxItems: 2 } },
            required: ['value'],
          },
        },
      },
    ],
    [
      '$ref to the root, and definitions',
      {
        type: 'object',
        properties: { name: { $ref: '#/definitions/name' }, parent: { $ref: '#' } },
        required: ['name'],
        definitions: { name: { type: 'string', minLength: 1 } },
      },
    ],
    ['type arrays', { type: ['string', 'integer', 'null'], minLength: 1, maximum: 9 }],
    ['nullable (OpenAPI)', { type: 'string', format: 'uuid', nullable: true }],
    [
      'annotations accepted and ignored',
      {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        $id: 'x',
        $comment: 'c',
        title: 't',
        description: 'd',
        examples: [1],
        default: 2,
        type: 'integer',
        minimum: 1,
      },
    ],
    ['{} and true: any value', { type: 'object', properties: { anything: {}, also: true }, required: ['anything', 'also'] }],
  ])('%s', (_keyword, schema) => {
    expectSamplesValid(schema);
  });
});

describe('schemaGrammar: edge values', () => {
  it('large counts, written in chunks, keep to their bounds', () => {
    expectSamplesValid({ type: 'string', minLength: 300, maxLength: 20_000 }, 20);
    expectSamplesValid({ type: 'array', items: { type: 'integer' }, minItems: 260, maxItems: 700 }, 20);
    const schema = { type: 'string', minLength: 300, maxLength: 20_000 };
    for (const [length, allowed] of [
      [299, false],
      [300, true],
      [16_447, true],
      [20_000, true],
      [20_001, false],
    ] as const)
      expect(accepts(schema, 'y'.repeat(length))).toBe(allowed);
  });

  const bound = fc.oneof(
    fc.integer({ min: -1_000_000, max: 1_000_000 }),
    fc.constantFrom(0, 1, -1, 9, 10, 99, 100, 101, 105, 999, 1000, 2 ** 31 - 1, -(2 ** 31)),
  );

  it('integer ranges hold both bounds and nothing beyond them', () => {
    fc.assert(
      fc.property(bound, bound, (a, b) => {
        const [lo, hi] = a <= b ? [a, b] : [b, a];
        const schema = { type: 'integer', minimum: lo, maximum: hi };
        expect(accepts(schema, lo)).toBe(true);
        expect(accepts(schema, hi)).toBe(true);
        expect(accepts(schema, Math.floor((lo + hi) / 2))).toBe(true);
        expect(accepts(schema, lo - 1)).toBe(false);
        expect(accepts(schema, hi + 1)).toBe(false);
      }),
      { numRuns: 150 },
    );
  });

  it('a minimum alone, or a maximum alone, holds the bound and not the next one out', () => {
    fc.assert(
      fc.property(bound, fc.boolean(), (value, exclusive) => {
        const low: JsonValue = exclusive ? { type: 'integer', exclusiveMinimum: value } : { type: 'integer', minimum: value };
        const high: JsonValue = exclusive ? { type: 'integer', exclusiveMaximum: value } : { type: 'integer', maximum: value };
        expect(accepts(low, value)).toBe(!exclusive);
        expect(accepts(low, value + 1)).toBe(true);
        expect(accepts(low, value - 1)).toBe(false);
        expect(accepts(low, value + 12345)).toBe(true);
        expect(accepts(high, value)).toBe(!exclusive);
        expect(accepts(high, value - 1)).toBe(true);
        expect(accepts(high, value + 1)).toBe(false);
      }),
      { numRuns: 150 },
    );
  });

  it('number bounds: exclusive ones keep the bound out and the values just inside', () => {
    fc.assert(
      fc.property(fc.integer({ min: -1000, max: 1000 }), fc.integer({ min: 1, max: 1000 }), (lo, width) => {
        const hi = lo + width;
        const exclusive = { type: 'number', exclusiveMinimum: lo, exclusiveMaximum: hi };
        const inclusive = { type: 'number', minimum: lo, maximum: hi };
        expect(grammarAccepts(rulesOf(exclusive), String(lo))).toBe(false);
        expect(grammarAccepts(rulesOf(exclusive), `${lo < 0 ? '-' + String(-lo - 1) : lo}.5`)).toBe(lo >= 0 || lo + 0.5 < hi);
        expect(grammarAccepts(rulesOf(exclusive), String(hi))).toBe(false);
        expect(grammarAccepts(rulesOf(inclusive), String(lo))).toBe(true);
        expect(grammarAccepts(rulesOf(inclusive), `${hi}.0`)).toBe(true);
        expect(grammarAccepts(rulesOf(inclusive), hi >= 0 ? `${hi}.01` : `-${-hi - 1}.99`)).toBe(false);
        expectSamplesValid(exclusive, 20);
      }),
      { numRuns: 60 },
    );
  });

  it('lengths: strings of exactly minLength and maxLength characters, none outside', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 400 }), fc.integer({ min: 0, max: 400 }), (min, extra) => {
        const schema = { type: 'string', minLength: min, maxLength: min + extra };
        expect(accepts(schema, 'é'.repeat(min))).toBe(true);
        expect(accepts(schema, 'x'.repeat(min + extra))).toBe(true);
        expect(accepts(schema, 'x'.repeat(min + extra + 1))).toBe(false);
        if (min > 0) expect(accepts(schema, 'x'.repeat(min - 1))).toBe(false);
      }),
      { numRuns: 60 },
    );
  });

  it('patterns: every string the regular expression matches is allowed, and every sample matches it', () => {
    const patterns = ['^[a-z]{1,8}(?:-[a-z0-9]{1,4}){0,3}$', '^\\d{3}-\\d{2}-\\d{4}$', '^(?:[A-Z][a-z]+ ?){1,3}$', '^#?[0-9a-fA-F]{6}$'];
    for (const pattern of patterns) {
      const schema = { type: 'string', pattern };
      fc.assert(
        fc.property(fc.stringMatching(new RegExp(pattern)), (text) => accepts(schema, text)),
        { numRuns: 100 },
      );
      expectSamplesValid(schema, 100);
    }
  });

  it('dates follow the calendar: leap days only in leap years, no 31st of a 30-day month', () => {
    const date = { type: 'string', format: 'date' };
    for (const good of ['2024-02-29', '2000-02-29', '1999-12-31', '2023-11-30', '0000-02-29']) expect(accepts(date, good)).toBe(true);
    for (const bad of ['2023-02-29', '1900-02-29', '0654-11-31', '2023-04-31', '2023-13-01', '2023-00-10']) expect(accepts(date, bad)).toBe(false);
    const dateTime = { type: 'string', format: 'date-time' };
    expect(accepts(dateTime, '0654-11-31T22:28:18.930-23:59')).toBe(false);
    expect(accepts(dateTime, '0654-11-30T22:28:18.930-23:59')).toBe(true);
  });

  it("formats also satisfy zod's own checks and WHATWG URL parsing", () => {
    const checks: Array<[string, z.ZodType]> = [
      ['uri', z.url()],
      ['email', z.email()],
      ['uuid', z.uuid()],
      ['date-time', z.iso.datetime({ offset: true })],
      ['date', z.iso.date()],
      ['ipv4', z.ipv4()],
      ['ipv6', z.ipv6()],
    ];
    for (const [format, check] of checks) {
      for (const value of expectSamplesValid({ type: 'string', format }, 100)) {
        expect({ format, value, ok: check.safeParse(value).success }).toEqual({ format, value, ok: true });
        if (format === 'uri') expect(() => new URL(value as string)).not.toThrow();
      }
    }
  });

  it('enum and const: each value, and nothing else', () => {
    const values = ['a', 'ab', 'abc', 'b', 'a"b', 3, null];
    const schema = { enum: values };
    for (const value of values) expect(accepts(schema, value)).toBe(true);
    for (const other of ['', 'abcd', 'c', 4, false]) expect(accepts(schema, other)).toBe(false);
  });

  it('records do not repeat a declared property under another schema', () => {
    const schema = { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'], additionalProperties: { type: 'string' } };
    expect(grammarAccepts(rulesOf(schema), '{"id":1,"name":"x"}')).toBe(true);
    expect(grammarAccepts(rulesOf(schema), '{"id":1,"id":"x"}')).toBe(false);
  });
});

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
