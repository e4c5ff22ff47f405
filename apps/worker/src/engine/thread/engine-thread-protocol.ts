import type { EngineCapabilities, OutputPart, TokenizeOptions } from '@app/contracts';
import type { ThreadError } from '../../completion-errors';
import type { EmbeddingOutcome, EmbeddingRequest, GenerationOutcome, GenerationRequest, RankOutcome, RankRequest, TokenizeOutcome } from '../inference-engine';

// Errors cross the thread boundary as the worker's one table of errors says.
export { describeError, reviveError } from '../../completion-errors';
export type { ThreadError } from '../../completion-errors';

/** A generation request as it crosses to the engine thread: plain data, without its signal and sink. */
export type ThreadGenerationRequest = Omit<GenerationRequest, 'signal' | 'output'>;

/** An embedding request as it crosses to the engine thread. */
export type ThreadEmbeddingRequest = Omit<EmbeddingRequest, 'signal' | 'output'>;

/** A rank request as it crosses to the engine thread. */
export type ThreadRankRequest = Omit<RankRequest, 'signal' | 'output'>;

/** What a job of any kind ends with. */
export type JobOutcome = GenerationOutcome | EmbeddingOutcome | RankOutcome | TokenizeOutcome;

/** What the worker's main thread tells the engine thread. */
export type EngineThreadCommand =
  | { type: 'generate'; id: number; request: ThreadGenerationRequest }
  | { type: 'embed'; id: number; request: ThreadEmbeddingRequest }
  | { type: 'rank'; id: number; request: ThreadRankRequest }
  | { type: 'tokenize'; id: number; request: TokenizeOptions }
  | { type: 'abort'; id: number }
  | { type: 'close' };

/** What the engine reports about itself once loaded. */
export interface EngineDescription {
  name: string;
  capabilities: EngineCapabilities;
  slots: number;
  contextSize: number;
}

/** One job's output part, outcome (of its kind) or failure, in the order they happened. */
export type GenerationEvent = { id: number; part: OutputPart } | { id: number; outcome: JobOutcome } | { id: number; error: ThreadError };

/** What the engine thread tells the main thread. */
export type EngineThreadReport =
  | { type: 'log'; message: string }
  | { type: 'ready'; engine: EngineDescription }
  | { type: 'load-failed'; error: ThreadError }
  /** An uncaught error: the thread closes its engine and exits. */
  | { type: 'failed'; error: ThreadError }
  /** Everything the generations produced in one turn of the thread's event loop. */
  | { type: 'events'; events: GenerationEvent[] }
  | { type: 'closed' };
