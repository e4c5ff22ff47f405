import type { JsonValue } from '@app/contracts';

/** Describe a value and change nothing it may be. */
export const ANNOTATIONS = new Set([
  'title',
  'description',
  'default',
  'examples',
  'example',
  '$schema',
  '$id',
  '$comment',
  '$anchor',
  'deprecated',
  'readOnly',
  'writeOnly',
  'contentEncoding',
  'contentMediaType',
  '$defs',
  'definitions',
  'discriminator',
  'xml',
  'externalDocs',
]);
/** Keywords that restrict values in ways a grammar does not follow here. */
export const UNENFORCED = new Set([
  'not',
  'if',
  'then',
  'else',
  'dependentRequired',
  'dependentSchemas',
  'dependencies',
  'patternProperties',
  'unevaluatedProperties',
  'unevaluatedItems',
  'contains',
  'minContains',
  'maxContains',
  'uniqueItems',
  'minProperties',
  'maxProperties',
  '$dynamicRef',
  '$recursiveRef',
]);
export const TYPES = ['string', 'number', 'integer', 'boolean', 'null', 'object', 'array'] as const;
export type TypeName = (typeof TYPES)[number];
export const KEYWORDS_OF: Record<TypeName, string[]> = {
  object: ['properties', 'required', 'additionalProperties', 'propertyNames'],
  array: ['items', 'prefixItems', 'minItems', 'maxItems', 'additionalItems'],
  string: ['minLength', 'maxLength', 'pattern', 'format'],
  number: ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'],
  integer: [],
  boolean: [],
  null: [],
};
KEYWORDS_OF.integer = KEYWORDS_OF.number;

/** The JSON Schema type of a value: `integer` for whole numbers. */
export function jsonTypeOf(value: JsonValue): TypeName {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'object') return 'object';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value as 'string' | 'boolean';
}

/** A value, shortened for a message. */
export const describe = (value: JsonValue): string => JSON.stringify(value).slice(0, 60);
