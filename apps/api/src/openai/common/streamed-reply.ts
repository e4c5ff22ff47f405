import type { OutputPart } from '@app/contracts';
import { toOpenAiError } from '../../errors/http-error-mapping';
import type { CompletionEnding } from '../../pipeline/completion-runner';
import type { DoorReply } from './buffered-reply';
import type { SseResponse } from './sse-response';

/**
 * A reply streamed as server-sent events while the output arrives (`stream: true`): what went out
 * cannot be taken back (the tracker still retries a worker lost before any output), and a failure
 * after the headers is a last `data: {"error": ...}` event before `[DONE]`.
 */
export abstract class StreamedReply implements DoorReply {
  readonly canRestart = false;
  abstract readonly promptParam: string;

  protected constructor(protected readonly sse: SseResponse) {}

  abstract write(parts: OutputPart[]): void;
  abstract finish(ending: CompletionEnding): Promise<void>;

  restart(): void {
    throw new Error('a streamed completion cannot restart');
  }

  fail(error: unknown): void {
    if (!this.sse.isOpen) throw error;
    this.sse.send(JSON.stringify(toOpenAiError(error).toBody()));
    this.sse.end();
  }
}
