import type { CompletionJobInput, StoredAnswer } from '@app/contracts';

/**
 * What a front door offers the Batch API for its `url`: a line's body checked exactly as the
 * door checks a request and made into its job, and an answer made into the body the same
 * request would have got. The batch coordinator finds the door by the batch's endpoint
 * (BatchLineDoors), so a batch holds any door's lines and the Batch API imports no door.
 */
export interface BatchLineDoor {
  /** The endpoint, as a batch and its lines name it (`/v1/chat/completions`). */
  readonly url: string;
  /** The door's name for the prompt, which a failure about it names. */
  readonly promptParam: string;
  /** Throws the OpenAiError the request would have got. */
  lineJob(body: Record<string, unknown>, requestId: string, acceptedAt: number, startDeadline: number): Promise<CompletionJobInput>;
  /** The door's answer body; `created` is the batch's start, in seconds. */
  answerBody(answer: StoredAnswer, requestId: string, body: Record<string, unknown>, created: number): object;
}
