/**
 * Names that jobs already stored in Redis depend on. DO NOT CHANGE THE VALUES once shipped:
 * a renamed queue or channel strands every job and stream that used the old one.
 */

/** One BullMQ queue per model, so each model's workers take only their own jobs. */
export function completionQueueName(model: string): string {
  return `completions-${model}`;
}

/**
 * The model's express lane (FAIR_SHARE_EXPRESS): jobs of keys under their fair share, taken only
 * by the workers' express sequences (EXPRESS_SEQUENCES), so such a job need not wait for a
 * backlogged key's running job to end. Same prefix (Cluster slot) as the model's queue.
 */
export function expressQueueName(model: string): string {
  return `${completionQueueName(model)}!express`;
}

/**
 * BullMQ's key prefix for a model's queue. The hash tag keeps all of one queue's keys in one
 * Redis Cluster slot (BullMQ's scripts need that) while different models' queues spread over
 * the cluster's nodes.
 */
export function completionQueuePrefix(model: string): string {
  return `{llm:${model}}`;
}

/**
 * A sharded pub/sub channel (SPUBLISH/SSUBSCRIBE) for one completion's token events: what a job
 * names in `replyTo` when its events need a channel of their own. In a cluster only the node
 * owning its slot carries it.
 */
export function completionEventsChannel(completionId: string): string {
  return `completion-events:${completionId}`;
}

/**
 * The sharded pub/sub channel on which workers publish the token events of every completion an
 * API instance is serving (each event names its completion): the instance subscribes once, at
 * boot, so a request costs no SUBSCRIBE or UNSUBSCRIBE.
 */
export function apiRepliesChannel(apiInstanceId: string): string {
  return `completion-replies:${apiInstanceId}`;
}

/** Where the API tells a model's workers (sharded pub/sub) that nobody wants a completion any more (message: its id). */
export function cancellationsChannel(model: string): string {
  return `completion-cancellations:${model}`;
}

/**
 * The keys of one stored or resumable completion, under one hash tag (one Redis Cluster slot):
 * its record (who asked, with what), its answer (written by the worker when it ends), its event
 * log (a Redis Stream a reconnecting client reads) and its lease (generation goes on while it lives).
 */
export function storedCompletionKeys(completionId: string): { record: string; answer: string; log: string; lease: string } {
  const tag = `{completion:${completionId}}`;
  return { record: `${tag}:record`, answer: `${tag}:answer`, log: `${tag}:events`, lease: `${tag}:lease` };
}

/** One API key's stored completions by creation time (a sorted set of ids), for listing. */
export function storedCompletionsIndexKey(apiKeyId: string): string {
  return `{stored-completions:${apiKeyId}}:by-created`;
}

/** The queue of batch coordination jobs (one per batch), processed by the API instances. */
export const BATCH_QUEUE_NAME = 'batches';
export const BATCH_QUEUE_PREFIX = '{batches}';

/** The queue of background responses' remote MCP tool loops (one job per response), processed by the API instances. */
export const RESPONSE_LOOP_QUEUE_NAME = 'response-loops';
export const RESPONSE_LOOP_QUEUE_PREFIX = '{response-loops}';

/**
 * The names jobs are added under, one set per queue (BullMQ records them on each job; operators
 * and benchmarks tell a job's kind by it). DO NOT CHANGE THE VALUES: they are in Redis already.
 */
export const CompletionJobName = {
  /** A chat completion someone waits for (or that is stored). */
  ChatCompletion: 'chat-completion',
  /** One line of a batch. */
  BatchLine: 'batch-line',
} as const;
export type CompletionJobName = (typeof CompletionJobName)[keyof typeof CompletionJobName];

export const BatchJobName = {
  /** The coordination of one batch (its id is the batch id). */
  Batch: 'batch',
} as const;
export type BatchJobName = (typeof BatchJobName)[keyof typeof BatchJobName];

export const ResponseLoopJobName = {
  /** The tool loop of one background response (its id is the response id). */
  McpLoop: 'mcp-loop',
} as const;
