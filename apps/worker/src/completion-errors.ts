import type { CompletionFailure, UpstreamRejection } from '@app/contracts';
import {
  ContextLengthExceededError,
  EngineUnavailableError,
  GenerationAbortedError,
  UnsupportedOptionError,
  UpstreamRejectedError,
} from './engine/inference-engine';

/** The job started after the API had stopped waiting for it. */
export class CompletionExpiredError extends Error {
  constructor() {
    super('The completion waited too long for a worker; the client has already been answered.');
    this.name = 'CompletionExpiredError';
  }
}

/** An error as it crosses threads: enough to raise the same class on the other side. */
export interface ThreadError {
  name: string;
  message: string;
  /** UnsupportedOptionError's request field. */
  param?: string;
  /** UpstreamRejectedError's refusal. */
  rejection?: UpstreamRejection;
}

interface ErrorKind<E extends Error> {
  /** Its class: an error is of this kind when it is an instance. */
  type: abstract new (...args: never[]) => E;
  /** What the client is told: the body of the job's error event. */
  failure: (error: E, signal: AbortSignal) => CompletionFailure;
  /** What crosses the thread boundary besides its name and message. */
  fields?: (error: E) => Partial<ThreadError>;
  /** The same error raised again on the worker's main thread from what crossed. */
  revive: (crossed: ThreadError) => E;
}

/** A kind with its class's own type checked, stored with the others. */
const kind = <E extends Error>(entry: ErrorKind<E>): ErrorKind<Error> => entry as unknown as ErrorKind<Error>;

/**
 * Every error a job is failed by on purpose, by class: its failure code and the body of its error
 * event, and how it crosses from the engine thread (describeError) and is raised again on the
 * main thread (reviveError). Anything else is an engine_error whose message is not passed on.
 */
const ERROR_KINDS: ReadonlyArray<ErrorKind<Error>> = [
  kind({
    type: ContextLengthExceededError,
    failure: (error) => ({ code: 'context_length_exceeded', message: error.message }),
    revive: ({ message }) => new ContextLengthExceededError(message),
  }),
  kind({
    type: UnsupportedOptionError,
    failure: (error) => ({ code: 'unsupported_option', message: error.message, param: error.param }),
    fields: (error) => ({ param: error.param }),
    // Its constructor words the message from the engine's name; keep the words it was raised with.
    revive: ({ message, param }) => Object.assign(new UnsupportedOptionError('', param ?? ''), { message }),
  }),
  kind({
    type: UpstreamRejectedError,
    failure: (error) => ({ code: 'upstream_rejected', message: error.message, upstream: error.rejection }),
    fields: (error) => ({ rejection: error.rejection }),
    revive: ({ message, rejection }) =>
      new UpstreamRejectedError(message, rejection ?? { status: 400, type: 'invalid_request_error', param: null, code: null }),
  }),
  kind({
    type: EngineUnavailableError,
    failure: () => ({ code: 'upstream_unavailable', message: 'The upstream inference server is not answering. Please retry shortly.' }),
    revive: ({ message }) => new EngineUnavailableError(message),
  }),
  kind({
    type: CompletionExpiredError,
    failure: (error) => ({ code: 'expired', message: error.message }),
    revive: () => new CompletionExpiredError(),
  }),
  kind({
    type: GenerationAbortedError,
    failure: (_error, signal) =>
      signal.reason instanceof DOMException && signal.reason.name === 'TimeoutError'
        ? { code: 'generation_timeout', message: 'The generation took longer than this service allows and was stopped.' }
        : { code: 'cancelled', message: 'The completion was cancelled.' },
    revive: () => new GenerationAbortedError(),
  }),
];

const kindOf = (error: unknown): ErrorKind<Error> | undefined => ERROR_KINDS.find(({ type }) => error instanceof type);

/** How a job that failed with `error` ends for its client. */
export function describeFailure(error: unknown, signal: AbortSignal): CompletionFailure {
  const found = kindOf(error);
  if (found) return found.failure(error as Error, signal);
  return { code: 'engine_error', message: 'The inference engine failed while generating this completion.' };
}

export function describeError(error: unknown): ThreadError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  return { name: error.name, message: error.message, ...kindOf(error)?.fields?.(error) };
}

/** The error the engine raised, as the class describeFailure tells failures apart by. */
export function reviveError(crossed: ThreadError): Error {
  const found = ERROR_KINDS.find(({ type }) => type.name === crossed.name);
  return found ? found.revive(crossed) : Object.assign(new Error(crossed.message), { name: crossed.name });
}
