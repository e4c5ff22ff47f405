import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { REPO_ROOT } from '../../tools/local-stack/services';
import { schemaAssertion } from './openai-schema';
import type { Json } from './openai-schema';

/** The Responses part of OpenAI's OpenAPI document, vendored with its upstream commit (test/reference/README.md). */
const REFERENCE = resolve(REPO_ROOT, 'test/reference/openai-responses.openapi.json');

type Schemas = { [name: string]: Json };

/**
 * A Response's `usage` may be null: OpenAI's API sends `"usage": null` before a response has
 * ended (its own examples of `response.created`), and Open Responses requires the field, null or
 * not; the document declares it an optional object only.
 */
function usageMayBeNull(schemas: Schemas): void {
  const response = schemas.Response as { allOf: Array<{ properties?: Schemas }> };
  const part = response.allOf.find((member) => member.properties?.usage !== undefined);
  if (!part?.properties) throw new Error('the Response schema has no usage to correct');
  part.properties.usage = { anyOf: [part.properties.usage, { type: 'null' }] };
}

/** Throws with ajv's explanation unless `value` matches the Responses document's components/schemas/<name>. */
export const assertMatchesResponsesSchema = schemaAssertion(REFERENCE, 'openai-responses', usageMayBeNull);

let eventSchemas: Map<string, string> | undefined;

/** Each stream event type's schema name, from the members of ResponseStreamEvent. */
function eventSchemaNames(): Map<string, string> {
  if (eventSchemas) return eventSchemas;
  const document = JSON.parse(readFileSync(REFERENCE, 'utf8')) as {
    components: { schemas: Record<string, { anyOf?: Array<{ $ref: string }>; properties?: { type?: { enum?: string[] } } }> };
  };
  const { schemas } = document.components;
  eventSchemas = new Map();
  for (const { $ref } of schemas.ResponseStreamEvent.anyOf ?? []) {
    const name = $ref.split('/').at(-1)!;
    const type = schemas[name]?.properties?.type?.enum?.[0];
    if (type !== undefined) eventSchemas.set(type, name);
  }
  return eventSchemas;
}

/** Validates a stream event against the schema of its own type (a clearer failure than the whole union's). */
export function assertMatchesResponseEvent(event: { type: string }): void {
  const name = eventSchemaNames().get(event.type);
  if (name === undefined) throw new Error(`no stream event of type ${event.type} in the schema`);
  assertMatchesResponsesSchema(name, event);
  assertMatchesResponsesSchema('ResponseStreamEvent', event);
}
