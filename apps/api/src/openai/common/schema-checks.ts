import { schemaGrammar } from '@app/grammar';
import type { GrammarSchema, JsonValue } from '@app/contracts';
import { OpenAiError } from '../../errors/openai-error';

/**
 * A schema checked as the worker will build its grammar (@app/grammar, schema-grammar.ts): a 400
 * naming the keyword and its path for an invalid schema, one over a limit, or (when `strict`) one
 * with a keyword the grammar cannot enforce. Not strict, such a keyword is a hint the model gets
 * with the schema; the grammar enforces the rest. Travels as sent.
 */
export function checkedSchema(schema: JsonValue, param: string, strict: boolean, code: string): GrammarSchema {
  const checked = schemaGrammar(schema, { strict });
  if (!checked.ok) {
    const { kind, keyword, path, message } = checked.problem;
    const why = kind === 'unsupported' ? `${message} Structured output with strict: true cannot honour it; send strict: false to have it as a hint.` : message;
    throw OpenAiError.invalidRequest(
      `Invalid schema in '${param}' (${kind === 'limit' ? `limit '${keyword}'` : `'${keyword}' at ${path}`}): ${why}`,
      param,
      code,
    );
  }
  return schema as GrammarSchema;
}
