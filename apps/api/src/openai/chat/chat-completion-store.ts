import type { StoreAnswer, StoredCompletionRecord } from '@app/contracts';
import type { DetachedReply } from '../../pipeline/completion-runner';

/** Ends a stored request's part here: its lease is released, and a job never queued leaves no record. */
export type EndStoredRequest = (outcome: { queued: boolean }) => void;

/** A `store: true` request, set up: where its job writes its answer and logs its events, and its end. */
export interface StoredRequest {
  store: StoreAnswer;
  reply: DetachedReply;
  end: EndStoredRequest;
}

/**
 * Where the chat door keeps `store: true` requests. The stored completions feature provides it
 * (StoredCompletions) and reads the chat door's shapes; the door knows only this, so the two do
 * not import each other.
 */
export abstract class ChatCompletionStore {
  /** Records the request before its job is queued; for a stream, also holds its resume lease. */
  abstract begin(record: StoredCompletionRecord, stream: boolean): Promise<StoredRequest>;
}
