import type { CompletionErrorCode, CompletionJobData, CompletionResult } from '@app/contracts';
import { ContextLengthExceededError, GenerationAbortedError } from './engine/inference-engine';
import type { InferenceEngine } from './engine/inference-engine';
import type { TokenEventPublisher } from './token-event-publisher';

function describeFailure(error: unknown): { code: CompletionErrorCode; message: string } {
  if (error instanceof ContextLengthExceededError) return { code: 'context_length_exceeded', message: error.message };
  if (error instanceof GenerationAbortedError) return { code: 'cancelled', message: 'The completion was cancelled.' };
  return { code: 'engine_error', message: 'The inference engine failed while generating this completion.' };
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

/** The use case a job runs: generate with the engine and stream what it produces as events. */
export async function generateCompletion(
  job: CompletionJobData,
  engine: InferenceEngine,
  events: TokenEventPublisher,
  workerId: string,
  signal: AbortSignal,
): Promise<CompletionResult> {
  events.started(workerId);
  try {
    const outcome = await engine.generate({
      messages: job.messages,
      sampling: job.sampling,
      signal,
      onText: (text) => events.delta(text),
    });
    await events.finish({ type: 'end', finishReason: outcome.finishReason, usage: outcome.usage });
    return outcome;
  } catch (error) {
    const { code, message } = describeFailure(error);
    await events.finish({ type: 'error', code, message }).catch(() => undefined);
    throw new CompletionFailedError(code, message, { cause: error });
  }
}
