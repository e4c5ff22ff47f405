import { clientErrorOf } from '@app/contracts';
import { CompletionExpiredError, describeError, describeFailure, reviveError } from './completion-errors';
import {
  ContextLengthExceededError,
  EngineUnavailableError,
  GenerationAbortedError,
  UnsupportedOptionError,
  UpstreamRejectedError,
} from './engine/inference-engine';

const rejection = { status: 422, type: 'invalid_request_error', param: 'temperature', code: null };
const running = new AbortController().signal;

/** Across the engine thread's boundary as postMessage carries it: a structured clone of the description. */
const crossed = (error: Error): Error => reviveError(structuredClone(describeError(error)));

describe("the worker's table of errors", () => {
  it.each<[string, Error, object]>([
    ['a prompt too long', new ContextLengthExceededError('too long'), { code: 'context_length_exceeded', message: 'too long' }],
    [
      'an option the engine lacks',
      new UnsupportedOptionError('llama.cpp', 'logprobs'),
      { code: 'unsupported_option', param: 'logprobs', message: 'The engine serving this model (llama.cpp) cannot honour logprobs.' },
    ],
    [
      'an upstream refusal',
      new UpstreamRejectedError('bad temperature', rejection),
      { code: 'upstream_rejected', message: 'bad temperature', upstream: rejection },
    ],
    [
      'an upstream away',
      new EngineUnavailableError('connect ECONNREFUSED'),
      { code: 'upstream_unavailable', message: 'The upstream inference server is not answering. Please retry shortly.' },
    ],
    ['a job past its start deadline', new CompletionExpiredError(), { code: 'expired' }],
    ['a cancelled generation', new GenerationAbortedError(), { code: 'cancelled', message: 'The completion was cancelled.' }],
  ])('gives %s its failure, on either side of the engine thread', (_case, error, failure) => {
    const revived = crossed(error);
    expect(revived).toBeInstanceOf(error.constructor);
    expect(revived).toMatchObject({ name: error.name, message: error.message });
    expect(describeFailure(error, running)).toEqual(expect.objectContaining(failure));
    expect(describeFailure(revived, running)).toEqual(describeFailure(error, running));
  });

  it.each<[Error, number]>([
    [new ContextLengthExceededError('too long'), 400],
    [new UnsupportedOptionError('llama.cpp', 'logprobs'), 400],
    [new UpstreamRejectedError('bad temperature', rejection), 422],
    [new EngineUnavailableError('connect ECONNREFUSED'), 503],
    [new CompletionExpiredError(), 503],
    [new Error('anything else'), 500],
  ])('gives %s, once revived, the status the one table in contracts gives its code', (error, status) => {
    expect(clientErrorOf(describeFailure(crossed(error), running)).status).toBe(status);
  });

  it('tells a generation stopped by its time limit from one cancelled', () => {
    const timedOut = AbortSignal.abort(new DOMException('too slow', 'TimeoutError'));
    expect(describeFailure(new GenerationAbortedError(), timedOut)).toMatchObject({ code: 'generation_timeout' });
  });

  it('reports any other error as an engine error without passing its message on', () => {
    const failure = describeFailure(new Error('secret path /home/x'), running);
    expect(failure).toEqual({ code: 'engine_error', message: 'The inference engine failed while generating this completion.' });
    const revived = crossed(new TypeError('boom'));
    expect(revived).toMatchObject({ name: 'TypeError', message: 'boom' });
    expect(describeFailure(revived, running).code).toBe('engine_error');
  });
});
