import type { StoredResponseRecord } from './stored-responses';

/** Lanes whose last response a connection keeps; the one used least recently goes first past this. */
export const MAX_REMEMBERED_LANES = 64;

/**
 * A connection's last response of each lane (`stream_id`; the default lane has none), in memory
 * only: a `previous_response_id` chain on the connection continues it without Redis,
 * `store: false` included, and a lane may fork from another's. A response that ends replaces its
 * lane's; a continuation of one that fails evicts it (as OpenAI does), so a retry cannot build on
 * state the failure may have left stale.
 */
export class LastResponse {
  private readonly byLane = new Map<string, StoredResponseRecord>();

  recall(id: string): StoredResponseRecord | undefined {
    for (const record of this.byLane.values()) if (record.identity.id === id) return record;
    return undefined;
  }

  remember(record: StoredResponseRecord, lane = ''): void {
    this.byLane.delete(lane);
    this.byLane.set(lane, record);
    if (this.byLane.size > MAX_REMEMBERED_LANES) this.byLane.delete(this.byLane.keys().next().value as string);
  }

  /** A turn failed; one that continued a remembered response takes it away. */
  failed(previousId: unknown): void {
    for (const [lane, record] of this.byLane) if (record.identity.id === previousId) this.byLane.delete(lane);
  }
}
