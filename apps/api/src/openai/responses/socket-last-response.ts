import type { StoredResponseRecord } from './stored-responses';

/**
 * A connection's last response, in memory only: a `previous_response_id` chain on the connection
 * continues it without Redis, `store: false` included. A response that ends replaces it; a
 * continuation of it that fails evicts it (as OpenAI does), so a retry cannot build on state the
 * failure may have left stale.
 */
export class LastResponse {
  private last: StoredResponseRecord | undefined;

  recall(id: string): StoredResponseRecord | undefined {
    return this.last?.identity.id === id ? this.last : undefined;
  }

  remember(record: StoredResponseRecord): void {
    this.last = record;
  }

  /** A turn failed; one that continued the last response takes it away. */
  failed(previousId: unknown): void {
    if (this.last !== undefined && this.last.identity.id === previousId) this.last = undefined;
  }
}
