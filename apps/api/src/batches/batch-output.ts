import type { BatchLineDoor } from '../openai/common/batch-line-door';
import { workerError } from '../pipeline/event-sequence-tracker';
import type { BatchRecord, BatchUsage } from './batch-object';
import { lineCompletionId } from './batch-object';
import type { LineOutcome } from './batch-records';

/** One line of the output or the error file, in OpenAI's shape. */
interface OutputLine {
  id: string;
  custom_id: string;
  response: { status_code: number; request_id: string; body: object } | null;
  error: { code: string; message: string } | null;
}

const UNRUN_MESSAGES = {
  cancelled: 'The batch was cancelled before this request ran.',
  expired: 'The batch expired before this request ran.',
} as const;

/** Where a line's outcome goes: an answer to the output file, anything else to the error file. */
export const fileOf = (outcome: LineOutcome): 'output' | 'error' => (outcome.answer ? 'output' : 'error');

/**
 * A line's outcome as its file holds it: an answer as the body the same request would have got
 * from its door; a failure as the error response it would have got (`response` with its status
 * and OpenAI error body), or, for a line the batch never ran, `error` with `batch_cancelled` /
 * `batch_expired`.
 */
export function outputLine(
  batch: BatchRecord,
  index: number,
  customId: string,
  body: Record<string, unknown>,
  outcome: LineOutcome,
  door: BatchLineDoor,
): string {
  const requestId = lineCompletionId(batch.id, index);
  const base = { id: `batch_req_${batch.id.slice('batch_'.length)}_${index}`, custom_id: customId };
  let line: OutputLine;
  if (outcome.answer) {
    const { answer } = outcome;
    const created = batch.in_progress_at ?? batch.created_at;
    line = { ...base, response: { status_code: 200, request_id: requestId, body: door.answerBody(answer, requestId, body, created) }, error: null };
    return JSON.stringify(line);
  }
  const failure = outcome.failure ?? { unrun: batch.stopping ?? 'expired' };
  if ('unrun' in failure) {
    line = { ...base, response: null, error: { code: `batch_${failure.unrun}`, message: UNRUN_MESSAGES[failure.unrun] } };
  } else if ('refused' in failure) {
    line = { ...base, response: { status_code: failure.refused.status, request_id: requestId, body: failure.refused.body }, error: null };
  } else if (failure.code === 'expired' || (failure.code === 'cancelled' && batch.stopping !== undefined)) {
    // Started past the window (its worker dropped it), or stopped mid-answer by the batch's cancel or expiry.
    const stop = failure.code === 'expired' ? 'expired' : (batch.stopping ?? 'cancelled');
    line = { ...base, response: null, error: { code: `batch_${stop}`, message: UNRUN_MESSAGES[stop] } };
  } else {
    const error = workerError(failure, door.promptParam);
    line = { ...base, response: { status_code: error.status, request_id: requestId, body: error.toBody() }, error: null };
  }
  return JSON.stringify(line);
}

/** The batch's usage: the sum over its answers, in OpenAI's shape for batches. */
export function addUsage(total: BatchUsage | undefined, outcome: LineOutcome): BatchUsage | undefined {
  if (!outcome.answer) return total;
  const { prompt_tokens: input, completion_tokens: output, prompt_tokens_details: details } = outcome.answer.usage;
  const sum = total ?? {
    input_tokens: 0,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 0,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 0,
  };
  return {
    ...sum,
    input_tokens: sum.input_tokens + input,
    input_tokens_details: { cached_tokens: sum.input_tokens_details.cached_tokens + (details?.cached_tokens ?? 0) },
    output_tokens: sum.output_tokens + output,
    total_tokens: sum.total_tokens + input + output,
  };
}
