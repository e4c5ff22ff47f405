import Ajv2020 from 'ajv/dist/2020';
import type { ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { REPO_ROOT } from '../../tools/local-stack/services';

/** OpenAI's own OpenAPI document, vendored with its upstream commit (test/reference/README.md). */
const REFERENCE = resolve(REPO_ROOT, 'test/reference/openai-chat-completions.openapi.json');

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** OpenAPI 3.0's `nullable: true` means "or null"; JSON Schema 2020 says that with a type list. */
export function convertNullable(node: Json): Json {
  if (Array.isArray(node)) return node.map(convertNullable);
  if (node === null || typeof node !== 'object') return node;
  const converted: { [key: string]: Json } = {};
  for (const [key, value] of Object.entries(node)) {
    if (key !== 'nullable') converted[key] = convertNullable(value);
  }
  if (node.nullable !== true) return converted;
  if (typeof converted.type === 'string') converted.type = [converted.type, 'null'];
  if (Array.isArray(converted.enum)) converted.enum = [...converted.enum, null];
  if (converted.type === undefined && converted.enum === undefined) return { anyOf: [converted, { type: 'null' }] };
  return converted;
}

/**
 * An assertion that a value matches components/schemas/<name> of the vendored document at
 * `referencePath`, compiled on first use (each document gets its own ajv, its `$id` unique).
 */
export function schemaAssertion(
  referencePath: string,
  id: string,
  /** Corrections of the document where OpenAI's own API answers otherwise (each says why). */
  correct: (schemas: { [name: string]: Json }) => void = () => undefined,
): (name: string, value: unknown) => void {
  let ajv: Ajv2020 | undefined;
  const compiler = (): Ajv2020 => {
    if (ajv) return ajv;
    const document = convertNullable(JSON.parse(readFileSync(referencePath, 'utf8')) as Json) as { [key: string]: Json };
    correct((document.components as { schemas: { [name: string]: Json } }).schemas);
    // The document carries vendor keywords (x-oaiMeta, …) and formats such as `unixtime`: not strict.
    ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addFormat('unixtime', { type: 'number', validate: (value: number) => Number.isInteger(value) && value >= 0 });
    ajv.addSchema({ $id: id, components: document.components }, id);
    return ajv;
  };
  const validators = new Map<string, ValidateFunction>();
  return (name, value) => {
    let validate = validators.get(name);
    if (!validate) {
      validate = compiler().compile({ $ref: `${id}#/components/schemas/${name}` });
      validators.set(name, validate);
    }
    if (!validate(value)) {
      throw new Error(`${name} schema violation: ${compiler().errorsText(validate.errors)}\n${JSON.stringify(value)}`);
    }
  };
}

/** Throws with ajv's explanation unless `value` matches components/schemas/<name>. */
export const assertMatchesSchema = schemaAssertion(REFERENCE, 'openai');
