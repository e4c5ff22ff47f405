import { HttpException } from '@nestjs/common';
import { OpenAiError } from './openai-error';

interface FastifyLikeError {
  statusCode?: number;
  code?: string;
}

function isFastifyError(error: unknown): error is Error & FastifyLikeError {
  return error instanceof Error && typeof (error as FastifyLikeError).statusCode === 'number';
}

/** Nest wraps Fastify's own 4xx errors (parser, body limit, bad URL) in an HttpException. */
function fastifyErrorIn(error: unknown): (Error & FastifyLikeError) | undefined {
  if (isFastifyError(error)) return error;
  if (error instanceof HttpException && isFastifyError(error.cause)) return error.cause;
  return undefined;
}

const NOT_JSON = 'We could not parse the JSON body of your request. The request body must be valid JSON.';

/** Fastify's errors by code, in our words: theirs name Fastify internals ("content-type is set to ..."). */
const FASTIFY_ERRORS: Record<string, () => OpenAiError> = {
  FST_ERR_CTP_BODY_TOO_LARGE: () => OpenAiError.tooLarge('The request body is too large.'),
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () => OpenAiError.invalidRequest('The request body must be JSON (Content-Type: application/json).'),
  FST_ERR_CTP_INVALID_JSON_BODY: () => OpenAiError.invalidRequest(NOT_JSON),
  FST_ERR_CTP_EMPTY_JSON_BODY: () => OpenAiError.invalidRequest('The request body is empty; it must be a JSON object.'),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => OpenAiError.invalidRequest('The request body does not match its Content-Length.'),
  FST_ERR_BAD_URL: () => new OpenAiError(400, 'invalid_request_error', 'The request URL is malformed.', null, 'invalid_url'),
};

function fromFastify(error: Error & FastifyLikeError): OpenAiError | undefined {
  const known = error.code === undefined ? undefined : FASTIFY_ERRORS[error.code];
  if (known) return known();
  const status = error.statusCode ?? 500;
  if (status === 413) return OpenAiError.tooLarge('The request body is too large.');
  // Parse errors of other kinds (a poisoned prototype key, a stream error) are 400s with a status.
  if (status === 400) return OpenAiError.invalidRequest(NOT_JSON);
  if (status > 400 && status < 500) return new OpenAiError(status, 'invalid_request_error', 'The request could not be processed.');
  return undefined;
}

/**
 * Turns anything thrown while serving a request into an OpenAI-shaped error. Messages of
 * unexpected errors are never passed on: they may hold internals, keys or other users' data.
 */
export function toOpenAiError(error: unknown): OpenAiError {
  if (error instanceof OpenAiError) return error;
  const fastifyError = fastifyErrorIn(error);
  const mapped = fastifyError && fromFastify(fastifyError);
  if (mapped) return mapped;
  if (error instanceof HttpException && error.getStatus() === 413) return OpenAiError.tooLarge('The request body is too large.');
  if (error instanceof HttpException && error.getStatus() === 404) {
    return new OpenAiError(404, 'invalid_request_error', 'Unknown route.', null, 'not_found');
  }
  if (error instanceof HttpException && error.getStatus() < 500) {
    return new OpenAiError(error.getStatus(), 'invalid_request_error', error.message);
  }
  return OpenAiError.internal();
}
