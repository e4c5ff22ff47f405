import { clientErrorOf } from '@app/contracts';
import type { CompletionErrorCode } from '@app/contracts';
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

  /**
   * Every failure code, from the error class (and abort reason) that raises it, across the engine
   * thread, to what the client is told by the one table in contracts. Keyed by code: a new code
   * does not compile until it has its row here.
   */
  const toClient: { readonly [C in CompletionErrorCode]: [Error, AbortSignal, { status: number; code: string | null }] } = {
    context_length_exceeded: [new ContextLengthExceededError('too long'), running, { status: 400, code: 'context_length_exceeded' }],
    unsupported_option: [new UnsupportedOptionError('llama.cpp', 'logprobs'), running, { status: 400, code: 'unsupported_parameter' }],
    upstream_rejected: [new UpstreamRejectedError('bad temperature', rejection), running, { status: 422, code: null }],
    upstream_unavailable: [new EngineUnavailableError('connect ECONNREFUSED'), running, { status: 503, code: 'upstream_unavailable' }],
    expired: [new CompletionExpiredError(), running, { status: 503, code: 'no_capacity' }],
    cancelled: [new GenerationAbortedError(), AbortSignal.abort(), { status: 500, code: null }],
    generation_timeout: [
      new GenerationAbortedError(),
      AbortSignal.abort(new DOMException('too slow', 'TimeoutError')),
      { status: 504, code: 'generation_timeout' },
    ],
    engine_error: [new Error('anything else'), running, { status: 500, code: null }],
  };

  it.each(Object.entries(toClient))(
    'gives the error behind %s, once revived, its code and the status the table in contracts gives it',
    (code, [error, signal, told]) => {
      const failure = describeFailure(crossed(error), signal);
      expect(failure.code).toBe(code);
      expect(clientErrorOf(failure, 'messages')).toMatchObject(told);
    },
  );

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
