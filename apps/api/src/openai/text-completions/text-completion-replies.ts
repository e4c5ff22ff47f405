import { isGenerationPart } from '@app/contracts';
import type { OutputPart } from '@app/contracts';
import type { FastifyReply } from 'fastify';
import type { CompletionEnding } from '../../pipeline/completion-runner';
import { SseResponse } from '../common/sse-response';
import { StreamedReply } from '../common/streamed-reply';
import type { TextCompletionFormatter } from './text-completion-formatter';

/** This door's prompt, which a failure about the prompt names. */
export const PROMPT_PARAM = 'prompt';

/** `stream: true`: a `text_completion` chunk per piece of text as it arrives, a finish chunk per choice, then `[DONE]`. */
export class StreamedTextCompletion extends StreamedReply {
  readonly promptParam = PROMPT_PARAM;
  private readonly ended = new Set<number>();
  /** With `logprobs`, text waiting (per choice) for the log probabilities of its tokens, which follow it. */
  private readonly textAwaitingLogprobs = new Map<number, string>();

  constructor(
    reply: FastifyReply,
    private readonly formatter: TextCompletionFormatter,
  ) {
    super(new SseResponse(reply, undefined));
  }

  write(parts: OutputPart[]): void {
    for (const part of parts.filter(isGenerationPart)) {
      if (part.type === 'text' && this.formatter.withLogprobs) {
        this.textAwaitingLogprobs.set(part.choice, (this.textAwaitingLogprobs.get(part.choice) ?? '') + part.text);
      } else if (part.type === 'text') {
        this.sse.send(this.formatter.textChunk(part.choice, part.text));
      } else if (part.type === 'logprobs') {
        this.sse.send(this.formatter.textChunk(part.choice, this.textAwaitingLogprobs.get(part.choice) ?? '', part));
        this.textAwaitingLogprobs.delete(part.choice);
      } else if (part.type === 'choice_end') {
        this.sendTextAwaitingLogprobs(part.choice);
        this.ended.add(part.choice);
        this.sse.send(this.formatter.finishChunk(part.choice, part.finishReason));
      }
    }
  }

  /** Text no log probabilities followed still goes out, before what comes after it. */
  private sendTextAwaitingLogprobs(choice?: number): void {
    for (const [waiting, text] of this.textAwaitingLogprobs) {
      if (choice !== undefined && waiting !== choice) continue;
      this.sse.send(this.formatter.textChunk(waiting, text));
      this.textAwaitingLogprobs.delete(waiting);
    }
  }

  finish(ending: CompletionEnding): Promise<void> {
    this.sendTextAwaitingLogprobs();
    // One choice ends with the answer: its finish reason is the end event's.
    if (!this.ended.has(0)) this.sse.send(this.formatter.finishChunk(0, ending.finishReason));
    if (this.formatter.includeUsage) this.sse.send(this.formatter.usageChunk(ending.usage));
    this.sse.end();
    return Promise.resolve();
  }
}
