import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { REPO_ROOT } from '../../tools/local-stack/services';
import { schemaAssertion } from './openai-schema';

/** The Responses part of OpenAI's OpenAPI document, vendored with its upstream commit (test/reference/README.md). */
const REFERENCE = resolve(REPO_ROOT, 'test/reference/openai-responses.openapi.json');

/** Throws with ajv's explanation unless `value` matches the Responses document's components/schemas/<name>. */
export const assertMatchesResponsesSchema = schemaAssertion(REFERENCE, 'openai-responses');

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
