import type { EventSink } from '../common/event-sink';
import type { StoredResponseRecord } from './stored-responses';

/**
 * One `response.create` of a WebSocket as ResponsesService runs it: where its events go, and the
 * connection's memory of its last response (OpenAI's connection-local cache), which a
 * `previous_response_id` may name even when it was not stored.
 */
export interface SocketTurn {
  events: EventSink;
  /** The connection's last response, if it has this id. */
  recall(id: string): StoredResponseRecord | undefined;
  /** This turn's response has ended (completed or incomplete): the connection's last response now. */
  remember(record: StoredResponseRecord): void;
}
