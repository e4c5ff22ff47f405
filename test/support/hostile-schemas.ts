export type Json = Record<string, unknown>;

/**
 * Schemas built to be expensive (test/hostile-schemas, test/strict-schemas): each is refused at
 * admission or answered within a bound.
 */
const nested = (depth: number): Json =>
  Array.from({ length: depth }).reduce<Json>((inner) => ({ type: 'object', properties: { a: inner }, required: ['a'] }), { type: 'string', maxLength: 3 });
export const HOSTILE: Array<[string, Json]> = [
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
