// What the schema-grammar-*.spec.ts files share: rules from a schema, seeded samples checked by ajv.
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { JsonValue } from '@app/contracts';
import { grammarAccepts, sampleGrammar } from './grammar-sampler';
import { schemaGrammar } from './schema-grammar';
import type { Rules } from './grammar-ast';

const ajv = addFormats(new Ajv2020({ strict: false, allErrors: false }));

export function rulesOf(schema: JsonValue, strict = true): Rules {
  const built = schemaGrammar(schema, { strict });
  if (!built.ok) throw new Error(`refused: ${built.problem.message}`);
  return built.rules;
}

/** Seeded uniform numbers, so a failing sample can be found again. */
function seeded(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
}

/** Every sample of the schema's grammar parses as JSON that the schema accepts (ajv with formats). */
export function expectSamplesValid(schema: JsonValue, count = 200, strict = true): unknown[] {
  const rules = rulesOf(schema, strict);
  const validate = ajv.compile(schema as object);
  const values: unknown[] = [];
  for (let seed = 1; seed <= count; seed++) {
    const text = sampleGrammar(rules, seeded(seed));
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new Error(`sample ${seed} is not JSON: ${text}`);
    }
    if (!validate(value)) throw new Error(`sample ${seed} breaks the schema: ${text} (${ajv.errorsText(validate.errors)})`);
    values.push(value);
  }
  return values;
}

export const accepts = (schema: JsonValue, value: unknown): boolean => grammarAccepts(rulesOf(schema), JSON.stringify(value));
