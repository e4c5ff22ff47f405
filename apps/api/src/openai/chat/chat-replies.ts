import { isGenerationPart } from '@app/contracts';
import type { OutputPart } from '@app/contracts';
import type { FastifyReply } from 'fastify';
import type { CompletionEnding } from '../../pipeline/completion-runner';
import type { ChatCompletionFormatter } from './chat-formatter';
import { BufferedReply } from '../common/buffered-reply';
import type { DoorReply } from '../common/buffered-reply';
import { SseResponse } from '../common/sse-response';
import { StreamedReply } from '../common/streamed-reply';
import type { FrameIds } from '../common/sse-response';

/** This door's prompt, which a failure about the prompt names. */
export const PROMPT_PARAM = 'messages';

/** The client's side of one chat completion. */
export type ChatCompletionResponse = DoorReply;

/** `stream: false`: the whole answer in one JSON body, so a lost worker can be retried unnoticed. */
export class BufferedChatCompletion extends BufferedReply implements ChatCompletionResponse {
  readonly promptParam = PROMPT_PARAM;

  constructor(
    private readonly reply: FastifyReply,
    private readonly formatter: ChatCompletionFormatter,
    private readonly choiceCount = 1,
  ) {
    super();
  }

  async finish(ending: CompletionEnding): Promise<void> {
    await this.reply.send(this.formatter.completion(this.parts, ending, this.choiceCount));
  }
}

/** `stream: true`: server-sent events as the output arrives; headers go out with the first of it. */
export class StreamedChatCompletion extends StreamedReply {
  readonly promptParam = PROMPT_PARAM;
  /** Choices whose role chunk went out, and those whose finish chunk did. */
  private readonly opened = new Set<number>([0]);
  private readonly ended = new Set<number>();
  /**
   * With `logprobs: true`, text waiting (per choice) for the logprobs part that follows it: each
   * content chunk carries its own tokens' log probabilities, as OpenAI's do.
   */
  private readonly textAwaitingLogprobs = new Map<number, string>();

  /** @param ids given for a resumable stream: its frames are numbered, and those the client has are skipped. */
  constructor(
    reply: FastifyReply,
    private readonly formatter: ChatCompletionFormatter,
    ids?: FrameIds,
  ) {
    super(new SseResponse(reply, formatter.roleChunk(), ids));
  }

  /** Sends the headers before any output (a resumed stream). */
  open(): void {
    this.sse.open();
  }

  write(parts: OutputPart[]): void {
    for (const part of parts.filter(isGenerationPart)) {
      if (!this.opened.has(part.choice)) {
        this.opened.add(part.choice);
        this.sse.send(this.formatter.roleChunk(part.choice));
      }
      if (this.formatter.withLogprobs && part.type === 'text') {
        this.textAwaitingLogprobs.set(part.choice, (this.textAwaitingLogprobs.get(part.choice) ?? '') + part.text);
        continue;
      }
      if (part.type === 'logprobs') {
        this.sse.send(this.formatter.textWithLogprobsChunk(this.textAwaitingLogprobs.get(part.choice) ?? '', part.content, part.choice));
        this.textAwaitingLogprobs.delete(part.choice);
        continue;
      }
      this.sendTextAwaitingLogprobs(part.choice);
      if (part.type === 'choice_end') this.ended.add(part.choice);
      this.sse.send(this.formatter.partChunk(part));
    }
  }

  /** Text no logprobs followed (an engine that scored none of its tokens) still goes out, before what comes after it. */
  private sendTextAwaitingLogprobs(choice?: number): void {
    for (const [waiting, text] of this.textAwaitingLogprobs) {
      if (choice !== undefined && waiting !== choice) continue;
      this.sse.send(this.formatter.textWithLogprobsChunk(text, [], waiting));
      this.textAwaitingLogprobs.delete(waiting);
    }
  }

  finish(ending: CompletionEnding): Promise<void> {
    this.sendTextAwaitingLogprobs();
    // One choice (n = 1) ends with the answer: its finish reason is the end event's.
    if (!this.ended.has(0)) this.sse.send(this.formatter.finishChunk(ending.finishReason));
    if (this.formatter.includeUsage) this.sse.send(this.formatter.usageChunk(ending.usage));
    this.sse.end();
    return Promise.resolve();
  }
}
