import type { EngineCapabilities, OutputPart } from '@app/contracts';
import { ContextLengthExceededError, GenerationAbortedError, UnsupportedOptionError } from '../inference-engine';
import type { GenerationOutcome, GenerationRequest } from '../inference-engine';

/** A generation request as it crosses to the engine thread: plain data, without its signal and sink. */
export type ThreadGenerationRequest = Omit<GenerationRequest, 'signal' | 'output'>;

/** What the worker's main thread tells the engine thread. */
export type EngineThreadCommand =
  | { type: 'generate'; id: number; request: ThreadGenerationRequest }
  | { type: 'abort'; id: number }
  | { type: 'close' };

/** What the engine reports about itself once loaded. */
export interface EngineDescription {
  name: string;
  capabilities: EngineCapabilities;
  slots: number;
  contextSize: number;
}

/** An error as it crosses threads: enough to raise the same class on the other side. */
export interface ThreadError {
  name: string;
  message: string;
  /** UnsupportedOptionError's request field. */
  param?: string;
}

/** One generation's output part, outcome or failure, in the order they happened. */
export type GenerationEvent = { id: number; part: OutputPart } | { id: number; outcome: GenerationOutcome } | { id: number; error: ThreadError };

/** What the engine thread tells the main thread. */
export type EngineThreadReport =
  | { type: 'log'; message: string }
  | { type: 'ready'; engine: EngineDescription }
  | { type: 'load-failed'; error: ThreadError }
  /** Everything the generations produced in one turn of the thread's event loop. */
  | { type: 'events'; events: GenerationEvent[] }
  | { type: 'closed' };

export function describeError(error: unknown): ThreadError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  return { name: error.name, message: error.message, ...(error instanceof UnsupportedOptionError ? { param: error.param } : {}) };
}

/** The error the engine raised, as the class generateCompletion tells failures apart by. */
export function reviveError({ name, message, param }: ThreadError): Error {
  switch (name) {
    case 'GenerationAbortedError':
      return new GenerationAbortedError();
    case 'ContextLengthExceededError':
      return new ContextLengthExceededError(message);
    case 'UnsupportedOptionError':
      // Its constructor words the message from the engine's name; keep the words it was raised with.
      return Object.assign(new UnsupportedOptionError('', param ?? ''), { message });
    default:
      return Object.assign(new Error(message), { name });
  }
}
