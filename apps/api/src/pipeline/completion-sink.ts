import type { OutputPart } from '@app/contracts';

/**
 * Where one completion's output goes on this API instance: the client's HTTP response, buffered
 * or streamed. The watch that follows the completion's events writes every output part here.
 */
export interface CompletionSink {
  /**
   * Whether the output received so far can still be taken back (nothing of it is on the wire):
   * then a worker lost mid-answer is retried without the client noticing, and `restart` drops it.
   */
  readonly canRestart: boolean;
  /** The door's name for the prompt (`messages`, `input`): a failure about the prompt names it. */
  readonly promptParam: string;
  write(parts: OutputPart[]): void;
  /** A new attempt starts over: forget the output received so far. Called only when `canRestart`. */
  restart(): void;
  /** Called once the job is in its queue (a background response answers its request then). */
  queued?(): void;
}
