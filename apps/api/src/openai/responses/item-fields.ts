import { jsonKindOf } from '@app/contracts';
import { OpenAiError } from '../../errors/openai-error';

/* How an input item's fields are read: each refusal a 400 naming the field, as OpenAI's are. */

export const invalid = (message: string, param: string): OpenAiError => OpenAiError.invalidRequest(message, param, 'invalid_value');
export const missing = (param: string): OpenAiError =>
  OpenAiError.invalidRequest(`Missing required parameter: '${param}'.`, param, 'missing_required_parameter');

export function requiredString(item: Record<string, unknown>, field: string, at: string): string {
  const value = item[field];
  if (value === undefined || value === null) throw missing(`${at}.${field}`);
  if (typeof value !== 'string')
    throw OpenAiError.invalidRequest(
      `Invalid type for '${at}.${field}': expected a string, but got ${jsonKindOf(value)} instead.`,
      `${at}.${field}`,
      'invalid_type',
    );
  return value;
}

export function optionalId(item: Record<string, unknown>, at: string): string | undefined {
  const id = item.id;
  if (id === undefined || id === null) return undefined;
  if (typeof id !== 'string' || id === '' || id.length > 256) throw invalid(`'${at}.id' must be a non-empty string of at most 256 characters.`, `${at}.id`);
  return id;
}
