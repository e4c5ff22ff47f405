import { isJsonObject } from '@app/contracts';
import type { CompletionJobInput } from '@app/contracts';
import { ChatCompletionRequestDto } from '../openai/chat/chat-request.dto';
import { toChatJob } from '../openai/chat/chat-job.mapper';
import { OpenAiError } from '../errors/openai-error';
import { validateBody } from '../request-pipes';
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

/**
 * A line's body checked exactly as `POST /v1/chat/completions` checks a request (the same pipes,
 * DTO and mapper), then made into its job. Throws the OpenAiError the request would have got.
 * A batch answers whole bodies: `stream` and `store` are refused by name.
 */
export async function lineJob(body: Record<string, unknown>, completionId: string, acceptedAt: number, startDeadline: number): Promise<CompletionJobInput> {
  const request = await validateBody(body, ChatCompletionRequestDto);
  if (request.stream === true)
    throw OpenAiError.invalidRequest('A batch answers whole bodies: stream is not supported in a batch line.', 'stream', 'unsupported_parameter');
  if (request.store === true)
    throw OpenAiError.invalidRequest('store is not supported in a batch line; its answers are in the output file.', 'store', 'unsupported_parameter');
  const job = toChatJob(request, completionId, acceptedAt, 0);
  return { ...job, schedule: { ...job.schedule, startDeadline } };
}
