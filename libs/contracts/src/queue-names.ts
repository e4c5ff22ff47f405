/**
 * Names that jobs already stored in Redis depend on. DO NOT CHANGE THE VALUES once shipped:
 * a renamed queue or channel strands every job and stream that used the old one.
 */
export const QUEUE_PREFIX = 'llm';

/** One BullMQ queue per model, so each model's workers take only their own jobs. */
export function completionQueueName(model: string): string {
  return `completions-${model}`;
}

/** The pub/sub channel on which the worker running a completion publishes its token events. */
export function completionEventsChannel(completionId: string): string {
  return `completion-events:${completionId}`;
}

/** Where the API tells a model's workers that nobody wants a completion any more (message: its id). */
export function cancellationsChannel(model: string): string {
  return `completion-cancellations:${model}`;
}
