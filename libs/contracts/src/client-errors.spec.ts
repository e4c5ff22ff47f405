import { clientErrorOf, NO_CAPACITY } from './client-errors';
import type { ClientError } from './client-errors';
import type { CompletionFailure } from './token-events';

describe('the error table: failure code to what the client is told', () => {
  it.each<[CompletionFailure, ClientError]>([
    [
      { code: 'context_length_exceeded', message: 'too long' },
      { status: 400, type: 'invalid_request_error', message: 'too long', param: 'messages', code: 'context_length_exceeded' },
    ],
    [
      { code: 'unsupported_option', message: 'cannot honour logprobs', param: 'logprobs' },
      { status: 400, type: 'invalid_request_error', message: 'cannot honour logprobs', param: 'logprobs', code: 'unsupported_parameter' },
    ],
    [
      {
        code: 'upstream_rejected',
        message: 'bad schema',
        upstream: { status: 422, type: 'invalid_request_error', param: 'response_format', code: 'invalid_schema' },
      },
      { status: 422, type: 'invalid_request_error', message: 'bad schema', param: 'response_format', code: 'invalid_schema' },
    ],
    [
      { code: 'upstream_unavailable', message: 'down' },
      { status: 503, type: 'server_error', message: 'down', param: null, code: 'upstream_unavailable', retryAfterSeconds: 5 },
    ],
    [
      { code: 'generation_timeout', message: 'too slow' },
      { status: 504, type: 'server_error', message: 'too slow', param: null, code: 'generation_timeout' },
    ],
    [{ code: 'expired', message: 'waited too long' }, NO_CAPACITY],
    [
      { code: 'cancelled', message: 'stopped' },
      { status: 500, type: 'server_error', message: 'The completion was cancelled.', param: null, code: null },
    ],
    [
      { code: 'engine_error', message: 'The inference engine failed.' },
      { status: 500, type: 'server_error', message: 'The inference engine failed.', param: null, code: null },
    ],
  ])('%j', (failure, told) => {
    expect(clientErrorOf(failure, 'messages')).toEqual(told);
  });

  it('answers a job no worker started in time with a 503 that says when to retry', () => {
    expect(NO_CAPACITY).toMatchObject({ status: 503, code: 'no_capacity', retryAfterSeconds: 5 });
  });
});
