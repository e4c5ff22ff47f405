import type { CompletionErrorCode, CompletionFailure } from './token-events';

/** What a client is told of a failure: OpenAI's error body, its HTTP status and any Retry-After. */
export interface ClientError {
  status: number;
  type: string;
  message: string;
  param: string | null;
  code: string | null;
  /** Seconds a client should wait before it retries (the Retry-After header); absent: no header. */
  retryAfterSeconds?: number;
}

/** Nobody started the completion before the API stopped waiting: the same 503 whether the API or a late worker finds it. */
export const NO_CAPACITY: ClientError = {
  status: 503,
  type: 'server_error',
  message: 'No worker could start this completion in time. Please retry shortly.',
  param: null,
  code: 'no_capacity',
  retryAfterSeconds: 5,
};

type Failure<C extends CompletionErrorCode> = Extract<CompletionFailure, { code: C }>;

/**
 * The one table from a worker's failure code to what the client is told. The worker's error
 * classes map to these codes (and back across the engine thread) in the worker's table
 * (apps/worker/src/completion-errors.ts); every front door and the batch output read this one,
 * so a code gets its status in one place. A new code does not compile until it has its row.
 */
const CLIENT_ERRORS: { readonly [C in CompletionErrorCode]: (failure: Failure<C>, promptParam: string) => ClientError } = {
  context_length_exceeded: ({ message }, promptParam) => ({
    status: 400,
    type: 'invalid_request_error',
    message,
    param: promptParam,
    code: 'context_length_exceeded',
  }),
  unsupported_option: ({ message, param }) => ({ status: 400, type: 'invalid_request_error', message, param, code: 'unsupported_parameter' }),
  // The upstream server's own refusal, as it gave it: the client sees what it would see there.
  upstream_rejected: ({ message, upstream }) => ({ status: upstream.status, type: upstream.type, message, param: upstream.param, code: upstream.code }),
  upstream_unavailable: ({ message }) => ({ status: 503, type: 'server_error', message, param: null, code: 'upstream_unavailable', retryAfterSeconds: 5 }),
  generation_timeout: ({ message }) => ({ status: 504, type: 'server_error', message, param: null, code: 'generation_timeout' }),
  expired: () => NO_CAPACITY,
  cancelled: () => ({ status: 500, type: 'server_error', message: 'The completion was cancelled.', param: null, code: null }),
  engine_error: ({ message }) => ({ status: 500, type: 'server_error', message, param: null, code: null }),
};

/**
 * What the client of a completion that failed with `failure` is told; `promptParam` is the door's
 * name for the prompt (`messages`, `input`), which a failure about the prompt names.
 */
export function clientErrorOf(failure: CompletionFailure, promptParam: string): ClientError {
  return (CLIENT_ERRORS[failure.code] as (failure: CompletionFailure, promptParam: string) => ClientError)(failure, promptParam);
}
