import { completionQueueName, completionQueuePrefix } from './queue-names';

/**
 * Prefix-cache affinity across a model's workers. DO NOT CHANGE THE VALUES once shipped: jobs
 * waiting in a worker's own queue and the key → worker map depend on them.
 */

/**
 * The queue of jobs placed on one worker because it served their affinity key last (its llama
 * sequences hold the conversation). It shares the model's queue prefix, so its keys sit in the
 * model's Redis Cluster slot as the shared queue's do.
 */
export function workerQueueName(model: string, workerId: string): string {
  return `${completionQueueName(model)}@${workerId}`;
}

/**
 * The ids of the model's workers that have an own queue (a set): every worker adds itself while
 * it lives, and the workers of the model empty a dead one's queue into the shared queue, then take
 * it out. In the model's slot, beside its queues.
 */
export function workerQueuesKey(model: string): string {
  return `${completionQueuePrefix(model)}:worker-queues`;
}

/**
 * Which worker served an affinity key last (a string, with a TTL). Under the model's hash tag, in
 * its Redis Cluster slot beside its queues: placement reads it and the queues' counts in one script.
 */
export function affinityMapKey(model: string, affinityKey: string): string {
  return `${completionQueuePrefix(model)}:affinity:${affinityKey}`;
}
