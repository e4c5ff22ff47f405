import type { ReleaseLease } from '../common/completion-lease';
import type { KeptRequest } from '../../pipeline/completion-use-case';
import type { CompletionEnding } from '../../pipeline/completion-runner';
import { redisUnavailable } from '../../pipeline/completion-admission';
import type { CutShortBy, ResponseOutcome, ResponseReply } from './responses-replies';
import type { SocketTurn } from './socket-turn';
import type { StoredResponseRecord, StoredResponses } from './stored-responses';

/** A stored response, recorded before its job is queued, and its lease (held while this instance follows it). */
export interface KeptResponse extends KeptRequest {
  record: StoredResponseRecord;
  release: ReleaseLease;
}

/**
 * One response that this instance follows to its end, over one model turn or a tool loop's
 * several: kept once (a stored one's record and lease), ended once, finished or failed, with
 * its record's end written before the client hears it and its lease released after.
 */
export class ResponseRun {
  private kept: KeptResponse | undefined;
  private over = false;

  constructor(
    readonly response: ResponseReply,
    private readonly record: StoredResponseRecord,
    private readonly stored: StoredResponses,
    private readonly socket: SocketTurn | undefined,
  ) {}

  /** Records a stored response and takes its lease: it lapses if this instance dies. */
  readonly keep = async (): Promise<KeptResponse> => {
    this.kept = { record: this.record, release: await this.stored.begin(this.record) };
    return this.kept;
  };

  /** Keeps it before any job is admitted (a tool loop's servers are listed first): Redis failing is a 503. */
  async keepFirst(): Promise<void> {
    await this.keep().catch(() => {
      throw redisUnavailable();
    });
  }

  finish(ending: CompletionEnding, cutShortBy?: CutShortBy): Promise<void> {
    return this.end(() =>
      this.response.finish(
        ending,
        async (outcome) => {
          this.socket?.remember({ ...this.record, state: outcome.state });
          await this.recordEnd(outcome);
        },
        cutShortBy,
      ),
    );
  }

  /** A failure: told to the client (rethrown while nothing is on the wire, its record then deleted), and recorded. */
  fail(error: unknown): Promise<void> {
    return this.end(async () => {
      let outcome: ResponseOutcome;
      try {
        outcome = this.response.fail(error);
      } catch (unsent) {
        if (this.kept) await this.stored.delete(this.kept.record).catch(() => undefined);
        throw unsent;
      }
      await this.recordEnd(outcome);
    });
  }

  /** A failure no turn's door saw (a later turn refused at admission) ends the response, unless it has ended. */
  async failUnlessEnded(error: unknown): Promise<void> {
    if (this.over) throw error;
    return this.fail(error);
  }

  private async recordEnd({ state, output }: ResponseOutcome): Promise<void> {
    if (this.kept) await this.stored.end(this.kept.record, state, output).catch(() => undefined);
  }

  private async end(ending: () => Promise<void>): Promise<void> {
    this.over = true;
    try {
      await ending();
    } finally {
      this.kept?.release();
    }
  }
}
