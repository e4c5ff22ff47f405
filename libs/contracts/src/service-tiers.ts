/**
 * OpenAI's service tiers as this service schedules them on a model's queue. BullMQ takes a job
 * from its wait list before any from its prioritized set (a lower priority number first, FIFO
 * within one number). Without fair share: `priority` goes to the head of the wait list, `default`
 * to its tail, `flex` to the prioritized set, and batch lines below `flex` in the same set. With
 * fair share (FAIR_SHARE=true) every interactive job goes to the prioritized set, each tier in a
 * band of its own (priority, then default, then flex), ordered within its band by its key's
 * virtual token counter; batch lines stay below every band. Either way a waiting interactive
 * request is taken before any batch line.
 */
export type ServiceTier = 'priority' | 'default' | 'flex';

/** BullMQ's highest priority number (`PRIORITY_LIMIT`, 2²¹ − 1): taken last. */
const PRIORITY_LIMIT = 2 ** 21 - 1;

/** Levels of one tier's fair-share band: three bands fill the numbers 1 … 2²¹ − 2. */
export const FAIR_SHARE_BAND_LEVELS = Math.floor((PRIORITY_LIMIT - 1) / 3);

const FAIR_SHARE_TIERS: readonly ServiceTier[] = ['priority', 'default', 'flex'];

/** The lowest (first taken) priority number of `tier`'s fair-share band. */
export function fairShareBandStart(tier: ServiceTier): number {
  return 1 + FAIR_SHARE_TIERS.indexOf(tier) * FAIR_SHARE_BAND_LEVELS;
}

/** BullMQ priorities in the prioritized set (a lower number is taken first; 0 is the wait list). */
export const FLEX_PRIORITY = fairShareBandStart('flex') + FAIR_SHARE_BAND_LEVELS - 1;
export const BATCH_PRIORITY = PRIORITY_LIMIT;

/**
 * The prioritized set's score of a job of `priority` is `priority × 2³²` plus a counter
 * (BullMQ's getPriorityScore.lua): every batch line scores at least this much.
 */
export const BATCH_SCORE_FLOOR = BATCH_PRIORITY * 2 ** 32;

/** BullMQ job options that place a job of `tier` in its queue when fair share is off. */
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
