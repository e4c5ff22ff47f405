import type { BatchError, BatchRecord, BatchStatus } from './batch-object';

/** The statuses a coordinator still has work in: one handler each. */
export type ActiveBatchStatus = Extract<BatchStatus, 'validating' | 'in_progress' | 'cancelling' | 'finalizing'>;

/** A move to another status, with what that status needs. */
export type BatchTransition =
  | { to: 'in_progress' }
  /** `requestedAt`: when the client asked (Unix seconds), which the batch shows as `cancelling_at`. */
  | { to: 'cancelling'; requestedAt: number }
  | { to: 'finalizing' }
  | { to: 'failed'; errors: BatchError[] }
  | { to: 'completed' | 'expired' | 'cancelled' };

/**
 * Where a batch may go from each status (OpenAI's batch lifecycle). Any unfinished batch may fail
 * (its input file deleted under it); a finished one never changes.
 */
const NEXT: Readonly<Record<BatchStatus, readonly BatchStatus[]>> = {
  validating: ['in_progress', 'failed'],
  in_progress: ['cancelling', 'finalizing', 'failed'],
  cancelling: ['finalizing', 'failed'],
  finalizing: ['completed', 'expired', 'cancelled', 'failed'],
  failed: [],
  completed: [],
  expired: [],
  cancelled: [],
};

/** The field of a status that says when the batch entered it. */
const ENTERED_AT = {
  in_progress: 'in_progress_at',
  cancelling: 'cancelling_at',
  finalizing: 'finalizing_at',
  failed: 'failed_at',
  completed: 'completed_at',
  expired: 'expired_at',
  cancelled: 'cancelled_at',
} as const satisfies Record<BatchTransition['to'], keyof BatchRecord>;

export class IllegalBatchTransitionError extends Error {
  constructor(from: BatchStatus, to: BatchStatus) {
    super(`a batch cannot go from ${from} to ${to}`);
    this.name = 'IllegalBatchTransitionError';
  }
}

/** Whether a batch in this status still has work for its coordinator (it is not finished). */
export const isActive = (status: BatchStatus): status is ActiveBatchStatus => NEXT[status].length > 0;

export const canMove = (from: BatchStatus, to: BatchStatus): boolean => NEXT[from].includes(to);

/**
 * Moves the batch to the transition's status, stamping when (`now`, Unix seconds) and what that
 * status needs; a move its lifecycle does not allow throws rather than corrupt the record.
 */
export function moveBatch(batch: BatchRecord, transition: BatchTransition, now: number): void {
  if (!canMove(batch.status, transition.to)) throw new IllegalBatchTransitionError(batch.status, transition.to);
  batch.status = transition.to;
  batch[ENTERED_AT[transition.to]] = transition.to === 'cancelling' ? transition.requestedAt : now;
  if (transition.to === 'failed') batch.errors = { object: 'list', data: transition.errors };
}
