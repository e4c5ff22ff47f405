import { HttpException } from '@nestjs/common';
import { OpenAiError } from './openai-error';

interface FastifyLikeError {
  statusCode?: number;
  code?: string;
}

function isFastifyError(error: unknown): error is Error & FastifyLikeError {
  return error instanceof Error && typeof (error as FastifyLikeError).statusCode === 'number';
}

/**
 * Turns anything thrown while serving a request into an OpenAI-shaped error. Messages of
 * unexpected errors are never passed on: they may hold internals, keys or other users' data.
 */
export function toOpenAiError(error: unknown): OpenAiError {
  if (error instanceof OpenAiError) return error;
  if (isFastifyError(error)) {
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || error.statusCode === 413) return OpenAiError.tooLarge('The request body is too large.');
    if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      return OpenAiError.invalidRequest('The request body must be JSON (Content-Type: application/json).');
    }
    if (error.statusCode === 400) {
      return OpenAiError.invalidRequest(
        'We could not parse the JSON body of your request. The request body must be valid JSON.',
      );
    }
  }
  if (error instanceof HttpException && error.getStatus() === 413) return OpenAiError.tooLarge('The request body is too large.');
  if (error instanceof HttpException && error.getStatus() === 404) {
    return new OpenAiError(404, 'invalid_request_error', 'Unknown route.', null, 'not_found');
  }
  if (error instanceof HttpException && error.getStatus() < 500) {
    return new OpenAiError(error.getStatus(), 'invalid_request_error', error.message);
  }
  return OpenAiError.internal();
}
