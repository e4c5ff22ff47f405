import { reduceJsonSchema } from './json-schema-subset';

describe('reduceJsonSchema', () => {
  it('keeps what the grammar enforces and drops annotations', () => {
    const schema = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      title: 'Person',
      type: 'object',
      properties: {
        name: { type: 'string', description: 'full name', minLength: 1, maxLength: 40 },
        tags: { type: 'array', items: { type: 'string' }, minItems: 1, default: [] },
        when: { type: 'string', format: 'date-time' },
        colour: { enum: ['red', 'green'] },
      },
      required: ['name'],
      additionalProperties: false,
    };
    expect(reduceJsonSchema(schema)).toEqual({
      ok: true,
      schema: {
        type: 'object',
        properties: {
          name: { type: 'string', minLength: 1, maxLength: 40 },
          tags: { type: 'array', items: { type: 'string' }, minItems: 1 },
          when: { type: 'string', format: 'date-time' },
          colour: { enum: ['red', 'green'] },
        },
        required: ['name'],
        additionalProperties: false,
      },
    });
  });

  it('maps exact equivalents: anyOf, definitions and their refs, a type list with object, one allOf', () => {
    const reduced = reduceJsonSchema({
      type: 'object',
      properties: {
        a: { anyOf: [{ type: 'string' }, { type: 'null' }] },
        b: { $ref: '#/definitions/B' },
        c: { type: ['object', 'null'], properties: { x: { type: 'number' } } },
        d: { allOf: [{ type: 'boolean' }] },
      },
      definitions: { B: { type: 'integer' } },
    });
    expect(reduced).toEqual({
      ok: true,
      schema: {
        type: 'object',
        properties: {
          a: { oneOf: [{ type: 'string' }, { type: 'null' }] },
          b: { $ref: '#/$defs/B' },
          c: { oneOf: [{ type: 'object', properties: { x: { type: 'number' } } }, { type: 'null' }] },
          d: { type: 'boolean' },
        },
        $defs: { B: { type: 'integer' } },
      },
    });
  });

  it("drops bounds no tighter than safe integers (zod's .int())", () => {
    const reduced = reduceJsonSchema({ type: 'integer', minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER });
    expect(reduced).toEqual({ ok: true, schema: { type: 'integer' } });
  });

  it.each([
    ['minimum', { type: 'object', properties: { n: { type: 'integer', minimum: 0 } } }, '$.properties.n.minimum'],
    ['pattern', { type: 'string', pattern: '^a' }, '$.pattern'],
    ['oneOf', { oneOf: [{ type: 'string' }, { type: 'string' }] }, '$.oneOf'],
    ['not', { not: { type: 'string' } }, '$.not'],
    ['format: "email"', { type: 'string', format: 'email' }, '$.format'],
    ['$ref', { $ref: 'https://example.com/schema' }, '$.$ref'],
    ['uniqueItems', { type: 'array', uniqueItems: true }, '$.uniqueItems'],
  ])('refuses %s, naming where it stands', (keyword, schema, path) => {
    expect(reduceJsonSchema(schema)).toEqual({ ok: false, keyword, path });
  });

  const anyValue = { oneOf: [{ type: ['string', 'number', 'boolean', 'null'] }, { type: 'object', additionalProperties: true }, { type: 'array' }] };

  it('reads {}, and a schema of annotations only, as any value wherever it stands', () => {
    expect(reduceJsonSchema({})).toEqual({ ok: true, schema: anyValue });
    const reduced = reduceJsonSchema({
      type: 'object',
      properties: { data: {}, note: { description: 'anything' } },
      additionalProperties: {},
      required: ['data'],
    });
    expect(reduced).toEqual({ ok: true, schema: { type: 'object', properties: { data: anyValue, note: anyValue }, additionalProperties: anyValue, required: ['data'] } });
    expect(reduceJsonSchema({ type: 'array', items: {} })).toEqual({ ok: true, schema: { type: 'array', items: anyValue } });
  });

  it("gives a schema without a type every type, each with the keywords that apply to it", () => {
    const reduced = reduceJsonSchema({ properties: { a: { type: 'string' } }, required: ['a'], maxLength: 3 });
    expect(reduced).toEqual({
      ok: true,
      schema: {
        oneOf: [
          { type: 'string', maxLength: 3 },
          { type: 'number' },
          { type: 'boolean' },
          { type: 'null' },
          { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] },
          { type: 'array' },
        ],
      },
    });
  });

  it('splits a type list whose types have keywords of their own, and keeps one with enum as it is', () => {
    expect(reduceJsonSchema({ type: ['string', 'null'], maxLength: 10 })).toEqual({ ok: true, schema: { oneOf: [{ type: 'string', maxLength: 10 }, { type: 'null' }] } });
    expect(reduceJsonSchema({ type: ['string', 'null'] })).toEqual({ ok: true, schema: { type: ['string', 'null'] } });
    expect(reduceJsonSchema({ type: ['string', 'null'], enum: ['a', null] })).toEqual({ ok: true, schema: { type: ['string', 'null'], enum: ['a', null] } });
  });

  it.each([
    ['anyOf', { type: 'object', properties: { a: { type: 'string' } }, anyOf: [{ required: ['a'] }, { required: ['b'] }] }, '$.anyOf'],
    ['$ref', { $ref: '#/$defs/A', type: 'object', $defs: { A: { type: 'object' } } }, '$.$ref'],
    ['allOf', { type: 'object', properties: { a: { type: 'string' } }, allOf: [{ properties: { b: { type: 'string' } } }] }, '$.allOf'],
  ])('refuses %s beside other constraints, which the grammar would not enforce', (keyword, schema, path) => {
    expect(reduceJsonSchema(schema)).toEqual({ ok: false, keyword, path });
  });

  it('keeps $defs beside a $ref, and one allOf beside annotations', () => {
    expect(reduceJsonSchema({ $ref: '#/definitions/A', definitions: { A: { type: 'string' } } })).toEqual({ ok: true, schema: { $ref: '#/$defs/A', $defs: { A: { type: 'string' } } } });
    expect(reduceJsonSchema({ description: 'a name', allOf: [{ $ref: '#/$defs/A' }] })).toEqual({ ok: true, schema: { $ref: '#/$defs/A' } });
  });
});
