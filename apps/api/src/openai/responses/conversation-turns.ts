import { Injectable, Logger } from '@nestjs/common';
import type { ConversationItem } from './response-items';
import { ConversationLocks } from './conversation-locks';
import { ConversationStore } from './conversation-store';

/**
 * A response's turn on its conversation: when it ends completed or incomplete, its input and
 * output items are appended (in one step, which also gives back the response's lock); any
 * other ending appends nothing and gives the lock back. Called wherever a stored response's end
 * is recorded (the instance following it, or any instance that settles it on read).
 */
@Injectable()
export class ConversationTurns {
  private readonly log = new Logger(ConversationTurns.name);

  constructor(
    private readonly store: ConversationStore,
    private readonly locks: ConversationLocks,
  ) {}

  /** `turn`: the response's input then output items; undefined when it did not complete. */
  async end(conversationId: string, responseId: string, turn: ConversationItem[] | undefined): Promise<void> {
    if (turn === undefined) return this.locks.release(conversationId, responseId);
    const refusal = await this.store.append(conversationId, turn, 'turn', 0, responseId);
    // Only a conversation deleted (or expired) while the response ran refuses a turn.
    if (refusal) this.log.warn(`The turn of ${responseId} was not kept: conversation ${conversationId} is gone`);
  }
}
