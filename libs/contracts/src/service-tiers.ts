/**
 * OpenAI's service tiers as this service schedules them on a model's queue. BullMQ takes a job
 * from its wait list before any from its prioritized set, so: `priority` goes to the head of the
 * wait list, `default` to its tail (the plain FIFO of every request so far), `flex` to the
 * prioritized set, and batch lines below `flex` in the same set. A waiting interactive request
 * is therefore always taken before any batch line.
 */
export type ServiceTier = 'priority' | 'default' | 'flex';

/** BullMQ priorities in the prioritized set (a lower number is taken first; 0 is the wait list). */
export const FLEX_PRIORITY = 1;
export const BATCH_PRIORITY = 2;

/**
 * The prioritized set's score of a job of `priority` is `priority × 2³²` plus a counter
 * (BullMQ's getPriorityScore.lua): every batch line scores at least this much.
 */
export const BATCH_SCORE_FLOOR = BATCH_PRIORITY * 2 ** 32;

/** BullMQ job options that place a job of `tier` in its queue. */
export function tierJobOptions(tier: ServiceTier): { lifo?: true; priority?: number } {
  switch (tier) {
    case 'priority':
      return { lifo: true };
    case 'default':
      return {};
    case 'flex':
      return { priority: FLEX_PRIORITY };
  }
}
