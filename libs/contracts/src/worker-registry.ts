import { JOB_KINDS } from './completion-job';
import type { EngineCapabilities } from './engine-capabilities';
import { isCount, isRecord } from './value-guards';

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
  capabilities: EngineCapabilities;
  slots: number;
  freeSlots: number;
  /** Tokens of prompt plus answer one sequence holds. */
  contextSize: number;
  /** Unix milliseconds. */
  announcedAt: number;
}

/**
 * Capabilities as announced: a worker of an earlier version names no unbiasable tokens (it checks
 * them itself) and no kinds (it runs `generate` jobs only).
 */
type AnnouncedCapabilities = Omit<EngineCapabilities, 'unbiasableTokens' | 'kinds'> & Partial<Pick<EngineCapabilities, 'unbiasableTokens' | 'kinds'>>;

const isJobKind = (value: unknown): boolean => (JOB_KINDS as readonly unknown[]).includes(value);

function isCapabilities(value: unknown): value is AnnouncedCapabilities {
  if (!isRecord(value)) return false;
  const c = value;
  return (
    typeof c.tools === 'boolean' &&
    typeof c.grammar === 'boolean' &&
    typeof c.logprobs === 'boolean' &&
    isCount(c.maxChoices) &&
    isCount(c.logitBiasTokens) &&
    (c.unbiasableTokens === undefined || (Array.isArray(c.unbiasableTokens) && c.unbiasableTokens.every(isCount))) &&
    // A kind this version does not know is one its API never queues: the worker still counts.
    (c.kinds === undefined || Array.isArray(c.kinds))
  );
}

/**
 * Reads one registry entry. An entry that is not a valid announcement (another version's, or
 * corrupt) is skipped by the caller: one bad entry must not hide every other worker.
 */
export function parseWorkerAnnouncement(entry: string): WorkerAnnouncement | undefined {
  let value: unknown;
  try {
    value = JSON.parse(entry);
  } catch {
    return undefined;
  }
  if (!isRecord(value)) return undefined;
  const a = value;
  const valid =
    typeof a.workerId === 'string' &&
    typeof a.model === 'string' &&
    typeof a.engine === 'string' &&
    isCapabilities(a.capabilities) &&
    isCount(a.slots) &&
    isCount(a.freeSlots) &&
    isCount(a.contextSize) &&
    isCount(a.announcedAt);
  if (!valid) return undefined;
  const announcement = value as Omit<WorkerAnnouncement, 'capabilities'> & { capabilities: AnnouncedCapabilities };
  const { unbiasableTokens = [], kinds = ['generate'] } = announcement.capabilities;
  return { ...announcement, capabilities: { ...announcement.capabilities, unbiasableTokens, kinds: kinds.filter(isJobKind) } };
}
