import type { CompletionUsage, FinishReason } from '@app/contracts';
import type { CompletionEnding } from '../completions/completion-runner';

/**
 * Builds the OpenAI bodies of one completion: `chat.completion` for a whole answer and
 * `chat.completion.chunk` for a stream. The parts every chunk shares are serialised once.
 */
export class ChatCompletionFormatter {
  private readonly chunkHead: string;
  /** A content chunk is these two around the JSON string of its text: one stringify per token. */
  private readonly contentHead: string;
  private readonly contentTail: string;

  constructor(
    readonly id: string,
    readonly model: string,
    readonly created: number,
    /** With `stream_options.include_usage`, every chunk carries `usage: null` until the last one. */
    readonly includeUsage = false,
  ) {
    const head = JSON.stringify({ id, object: 'chat.completion.chunk', created, model });
    this.chunkHead = head.slice(0, -1);
    this.contentHead = `${this.chunkHead},"choices":[{"index":0,"delta":{"content":`;
    this.contentTail = `},"logprobs":null,"finish_reason":null}]${includeUsage ? ',"usage":null' : ''}}`;
  }

  completion(content: string, ending: CompletionEnding): object {
    return {
      id: this.id,
      object: 'chat.completion',
      created: this.created,
      model: this.model,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content, refusal: null },
          logprobs: null,
          finish_reason: ending.finishReason,
        },
      ],
      usage: ending.usage,
    };
  }

  /** The first chunk announces the role, as OpenAI's does. */
  roleChunk(): string {
    return this.chunk({ role: 'assistant', content: '' }, null);
  }

  /** The chunk sent for every piece of text: the hot path of a stream, so built without a generic stringify. */
  contentChunk(text: string): string {
    return `${this.contentHead}${JSON.stringify(text)}${this.contentTail}`;
  }

  finishChunk(finishReason: FinishReason): string {
    return this.chunk({}, finishReason);
  }

  usageChunk(usage: CompletionUsage): string {
    return `${this.chunkHead},"choices":[],"usage":${JSON.stringify(usage)}}`;
  }

  private chunk(delta: object, finishReason: FinishReason | null): string {
    const choice = JSON.stringify({ index: 0, delta, logprobs: null, finish_reason: finishReason });
    return `${this.chunkHead},"choices":[${choice}]${this.includeUsage ? ',"usage":null' : ''}}`;
  }
}
