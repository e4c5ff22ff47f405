/**
 * The live model registry: each worker announces itself every ANNOUNCE_INTERVAL_MS and counts
 * as alive until its announcement is ANNOUNCEMENT_TTL_MS old. A sorted set scores each worker by
 * the moment it expires; a hash holds its latest announcement. DO NOT CHANGE THE KEY NAMES once
 * shipped: APIs and workers of different versions read each other's entries.
 */
export const WORKER_REGISTRY_KEYS = {
  // One hash tag: both keys sit in one cluster slot, so they can change in one MULTI.
  expiries: '{llm-workers}:expiries',
  announcements: '{llm-workers}:announcements',
} as const;

export const ANNOUNCE_INTERVAL_MS = 2000;
export const ANNOUNCEMENT_TTL_MS = 3 * ANNOUNCE_INTERVAL_MS;

export interface WorkerAnnouncement {
  workerId: string;
  model: string;
  /** Which inference engine serves it, e.g. `llama.cpp`. */
  engine: string;
  slots: number;
  freeSlots: number;
  /** Tokens of prompt plus answer one sequence holds. */
  contextSize: number;
  /** Unix milliseconds. */
  announcedAt: number;
}
