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

  it('reads {} as any value', () => {
    const reduced = reduceJsonSchema({});
    expect(reduced.ok).toBe(true);
  });
});
