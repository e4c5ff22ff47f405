import { isJsonObject } from '@app/contracts';
import type { BatchError } from './batch-object';

/** One request of a batch input file: `{custom_id, method, url, body}`. */
export interface BatchLine {
  customId: string;
  body: Record<string, unknown>;
}

const MAX_CUSTOM_ID = 512;

const lineError = (line: number, code: string, message: string, param: string | null = null): BatchError => ({ code, message, param, line });

/**
 * A line's envelope, as OpenAI checks it before the batch runs: a JSON object with a
 * `custom_id`, `method: "POST"`, the batch's endpoint as `url`, and an object `body`. What is
 * wrong here fails the whole batch (`errors`); what is wrong inside `body` fails only the line.
 */
export function parseLine(text: string, line: number, endpoint: string): BatchLine | BatchError {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return lineError(line, 'invalid_json_line', `Line ${line} is not valid JSON.`);
  }
  if (!isJsonObject(value)) return lineError(line, 'invalid_request', `Line ${line} must be a JSON object.`);
  const { custom_id: customId, method, url, body } = value;
  if (typeof customId !== 'string' || customId.length === 0 || customId.length > MAX_CUSTOM_ID) {
    return lineError(line, 'invalid_request', `Line ${line}: custom_id must be a string of 1 to ${MAX_CUSTOM_ID} characters.`, 'custom_id');
  }
  if (method !== 'POST') return lineError(line, 'invalid_request', `Line ${line}: method must be "POST".`, 'method');
  if (url !== endpoint) return lineError(line, 'invalid_url', `Line ${line}: url must be "${endpoint}", the batch's endpoint.`, 'url');
  if (!isJsonObject(body)) return lineError(line, 'invalid_request', `Line ${line}: body must be a JSON object.`, 'body');
  const extra = Object.keys(value).find((key) => !['custom_id', 'method', 'url', 'body'].includes(key));
  if (extra !== undefined) return lineError(line, 'invalid_request', `Line ${line}: unrecognized field ${extra}.`, extra);
  return { customId, body };
}

export const isBatchError = (parsed: BatchLine | BatchError): parsed is BatchError => 'code' in parsed;
