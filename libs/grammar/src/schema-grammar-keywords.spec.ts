import type { JsonValue } from '@app/contracts';
import { expectSamplesValid } from './schema-grammar.fixtures';

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
