import type { ClientError } from '@app/contracts';

/** OpenAI's error body: `{"error": {"message", "type", "param", "code"}}`. */
export interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** An error that reaches the client as-is, with OpenAI's shape and an HTTP status. */
export class OpenAiError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
    /** Extra response headers such as Retry-After. */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'OpenAiError';
  }

  toBody(): OpenAiErrorBody {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }

  static invalidRequest(message: string, param: string | null = null, code: string | null = null): OpenAiError {
    return new OpenAiError(400, 'invalid_request_error', message, param, code);
  }

  /** 413: the body, a message or the number of messages is over this service's bounds. */
  static tooLarge(message: string, param: string | null = null): OpenAiError {
    return new OpenAiError(413, 'invalid_request_error', message, param, 'request_too_large');
  }

  static unauthorized(message: string, code: string | null): OpenAiError {
    return new OpenAiError(401, 'invalid_request_error', message, null, code);
  }

  static modelNotFound(model: string): OpenAiError {
    return new OpenAiError(404, 'invalid_request_error', `The model \`${model}\` does not exist or you do not have access to it.`, 'model', 'model_not_found');
  }

  /** 404: nothing by that id, or nothing this API key may see (the two are not told apart). */
  static notFound(message: string, param: string | null = null, code: string | null = 'not_found'): OpenAiError {
    return new OpenAiError(404, 'invalid_request_error', message, param, code);
  }

  /** The client went away before its answer was complete (nginx's 499); nobody reads it. */
  static clientClosed(): OpenAiError {
    return new OpenAiError(499, 'invalid_request_error', 'The client closed the request.', null, 'client_closed');
  }

  static unavailable(message: string, code: string, retryAfterSeconds: number): OpenAiError {
    return new OpenAiError(503, 'server_error', message, null, code, { 'retry-after': String(retryAfterSeconds) });
  }

  /** A failure as the contracts' error table words it (a worker's failure, by its code). */
  static fromClientError({ status, type, message, param, code, retryAfterSeconds }: ClientError): OpenAiError {
    return new OpenAiError(status, type, message, param, code, retryAfterSeconds === undefined ? {} : { 'retry-after': String(retryAfterSeconds) });
  }

  static internal(message = 'The server had an error while processing your request.'): OpenAiError {
    return new OpenAiError(500, 'server_error', message, null, null);
  }
}
