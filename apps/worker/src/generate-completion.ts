import type { CompletionErrorCode, CompletionJobData, CompletionResult } from '@app/contracts';
import { ContextLengthExceededError, GenerationAbortedError } from './engine/inference-engine';
import type { InferenceEngine } from './engine/inference-engine';
import type { TokenEventPublisher } from './token-event-publisher';

function describeFailure(error: unknown, signal: AbortSignal): { code: CompletionErrorCode; message: string } {
  if (error instanceof ContextLengthExceededError) return { code: 'context_length_exceeded', message: error.message };
  if (error instanceof CompletionExpiredError) return { code: 'expired', message: error.message };
  if (error instanceof GenerationAbortedError) {
    const timedOut = signal.reason instanceof DOMException && signal.reason.name === 'TimeoutError';
    return timedOut
      ? { code: 'generation_timeout', message: 'The generation took longer than this service allows and was stopped.' }
      : { code: 'cancelled', message: 'The completion was cancelled.' };
  }
  return { code: 'engine_error', message: 'The inference engine failed while generating this completion.' };
}

/** The job started after the API had stopped waiting for it. */
export class CompletionExpiredError extends Error {
  constructor() {
    super('The completion waited too long for a worker; the client has already been answered.');
    this.name = 'CompletionExpiredError';
  }
}

/** Raised after the error event is out, so the queue records why the job failed. */
export class CompletionFailedError extends Error {
  constructor(
    readonly code: CompletionErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'CompletionFailedError';
  }
}

export interface CompletionRun {
  workerId: string;
  /** 1 for the first attempt; more when the queue hands a dead worker's job to another. */
  attempt: number;
  signal: AbortSignal;
}

/** The use case a job runs: generate with the engine and stream what it produces as events. */
export async function generateCompletion(
  job: CompletionJobData,
  engine: InferenceEngine,
  events: TokenEventPublisher,
  { workerId, attempt, signal }: CompletionRun,
): Promise<CompletionResult> {
  events.started(workerId);
  try {
    // A retry is awaited past the first deadline: the API restarts its wait when a worker dies.
    if (attempt === 1 && Date.now() > job.startDeadline) throw new CompletionExpiredError();
    const outcome = await engine.generate({
      messages: job.messages,
      sampling: job.sampling,
      signal,
      onText: (text) => events.delta(text),
    });
    await events.finish({ type: 'end', finishReason: outcome.finishReason, usage: outcome.usage });
    return outcome;
  } catch (error) {
    const { code, message } = describeFailure(error, signal);
    await events.finish({ type: 'error', code, message }).catch(() => undefined);
    throw new CompletionFailedError(code, message, { cause: error });
  }
}
