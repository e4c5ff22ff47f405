import { resolve } from 'node:path';
import { REPO_ROOT } from '../../tools/local-stack/services';
import { schemaAssertion } from './openai-schema';

/** The Conversations part of OpenAI's OpenAPI document, vendored with its upstream commit (test/reference/README.md). */
const REFERENCE = resolve(REPO_ROOT, 'test/reference/openai-conversations.openapi.json');

/** Throws with ajv's explanation unless `value` matches that document's components/schemas/<name>. */
export const assertMatchesConversationsSchema = schemaAssertion(REFERENCE, 'openai-conversations');
