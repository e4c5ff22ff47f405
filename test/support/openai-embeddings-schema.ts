import { resolve } from 'node:path';
import { REPO_ROOT } from '../../tools/local-stack/services';
import { schemaAssertion } from './openai-schema';

/** The embeddings and legacy completions part of OpenAI's OpenAPI document, vendored with its upstream commit (test/reference/README.md). */
const REFERENCE = resolve(REPO_ROOT, 'test/reference/openai-embeddings-completions.openapi.json');

/** Throws with ajv's explanation unless `value` matches that document's components/schemas/<name>. */
export const assertMatchesEmbeddingsSchema = schemaAssertion(REFERENCE, 'openai-embeddings-completions');
