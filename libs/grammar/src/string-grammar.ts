import type { JsonObject } from '@app/contracts';
import { sequence } from './grammar-ast';
import type { GrammarNode } from './grammar-ast';
import type { GrammarBuild } from './grammar-build';
import { QUOTE, STRING_CHAR } from './json-text';
import { PatternProblem, fitLength, lengthRange, parsePattern, regexGrammar } from './regex-grammar';
import type { RegexNode } from './regex-grammar';
import { describe } from './schema-keywords';
import { INTEGER_FORMATS, STRING_FORMATS } from './string-formats';

/** The grammar of a `string` schema: lengths, `pattern` (a regular expression) and the formats known here. */
export function stringGrammar(build: GrammarBuild, schema: JsonObject, path: string): GrammarNode {
  const min = build.length(schema, 'minLength', path) ?? 0;
  const max = build.length(schema, 'maxLength', path);
  if (max !== undefined && max < min)
    build.fail('invalid', 'maxLength', `${path}.maxLength`, `'maxLength' at ${path} is below 'minLength': no string satisfies both.`);
  let regex: RegexNode | undefined;
  let source: 'pattern' | 'format' | undefined;
  if (schema.pattern !== undefined) {
    if (typeof schema.pattern !== 'string') build.fail('invalid', 'pattern', `${path}.pattern`, `'pattern' at ${path} must be a string.`);
    regex = pattern(build, schema.pattern, `${path}.pattern`);
    if (regex) source = 'pattern';
  }
  const format = schema.format;
  if (format !== undefined && typeof format === 'string' && STRING_FORMATS[format] !== undefined && regex === undefined) {
    regex = parsePattern(STRING_FORMATS[format]);
    source = 'format';
  } else if (format !== undefined && typeof format === 'string' && STRING_FORMATS[format] === undefined && INTEGER_FORMATS[format] === undefined) {
    // Formats are annotations unless a validator knows them; one no grammar here knows is left to the model.
    build.note('format', `${path}.format`, `format ${describe(format)} (at ${path}) is not enforced here.`);
  }
  if (regex !== undefined) {
    const fitted = fitLength(regex, min, max);
    if (fitted === undefined) {
      build.unsupported(min > 0 ? 'minLength' : 'maxLength', path, `'minLength'/'maxLength' together with the ${source} at ${path} are not enforced here.`);
      return sequence(QUOTE, regexGrammar(regex), QUOTE);
    }
    const [, hi] = lengthRange(fitted);
    if (hi === undefined && max !== undefined) return sequence(QUOTE, regexGrammar(regex), QUOTE);
    return sequence(QUOTE, regexGrammar(fitted), QUOTE);
  }
  if (min === 0 && max === undefined) return build.anyString();
  return sequence(QUOTE, build.repeat(STRING_CHAR, min, max, 'char'), QUOTE);
}

/** A pattern as a grammar, or undefined where it cannot be one (noted, or refused when strict). */
function pattern(build: GrammarBuild, pattern: string, path: string): RegexNode | undefined {
  try {
    return parsePattern(pattern);
  } catch (error) {
    if (!(error instanceof PatternProblem)) throw error;
    if (error.reason === 'invalid') build.fail('invalid', 'pattern', path, `'pattern' at ${path} is not a valid regular expression: ${error.message}.`);
    if (error.reason === 'limit') build.fail('limit', 'pattern', path, `'pattern' at ${path} is too complex for structured output: ${error.message}.`);
    build.unsupported('pattern', path, `'pattern' at ${path} uses ${error.message}, which a grammar cannot express.`);
    return undefined;
  }
}
