import { isGenerationPart } from '@app/contracts';
import type { CompletionUsage, FinishReason, GenerationPart, OutputPart, ServiceTier, TokenLogprob } from '@app/contracts';
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionMessage, ChatCompletionMessageFunctionToolCall } from 'openai/resources/chat/completions';
import type { CompletionEnding } from '../../pipeline/completion-runner';

/** What a reasoning model thought, where clients of OpenAI-compatible servers read it (not in OpenAI's own types). */
interface Reasoning {
  reasoning_content?: string;
}

/** OpenAI's `chat.completion`, its messages with the reasoning they may carry. */
export type ChatCompletionBody = Omit<ChatCompletion, 'choices'> & {
  choices: Array<Omit<ChatCompletion.Choice, 'message'> & { message: ChatCompletionMessage & Reasoning }>;
};

type ChunkChoice = ChatCompletionChunk.Choice & { delta: ChatCompletionChunk.Choice.Delta & Reasoning };
/** What every chunk of one completion shares: all of OpenAI's `chat.completion.chunk` but its choices and usage. */
type ChunkHead = Omit<ChatCompletionChunk, 'choices' | 'usage'>;

/**
 * Builds the OpenAI bodies of one completion: `chat.completion` for a whole answer and
 * `chat.completion.chunk` for a stream. This is the one place where each kind of output part
 * becomes OpenAI's message or chunk shape. The parts every chunk shares are serialised once.
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
    /** With `logprobs: true`, every choice of a whole answer carries `logprobs.content`. */
    readonly withLogprobs = false,
    /** The tier that served it, on the answer and on every chunk (OpenAI's `service_tier`). */
    readonly serviceTier: ServiceTier = 'default',
  ) {
    const head: ChunkHead = { id, object: 'chat.completion.chunk', created, model, service_tier: serviceTier };
    this.chunkHead = JSON.stringify(head).slice(0, -1);
    this.contentHead = `${this.chunkHead},"choices":[{"index":0,"delta":{"content":`;
    this.contentTail = `},"logprobs":null,"finish_reason":null}]${includeUsage ? ',"usage":null' : ''}}`;
  }

  /**
   * The whole answer, from its output parts in order (adjacent text already merged or not): one
   * choice per index, each ending with its own finish reason or, when none came, the answer's.
   */
  completion(parts: OutputPart[], ending: CompletionEnding, choiceCount = 1): ChatCompletionBody {
    const choices = Array.from({ length: choiceCount }, () => ({
      content: '',
      reasoning: '',
      toolCalls: [] as ChatCompletionMessageFunctionToolCall[],
      logprobs: [] as TokenLogprob[],
      finishReason: ending.finishReason,
    }));
    for (const part of parts.filter(isGenerationPart)) {
      const choice = choices[part.choice];
      switch (part.type) {
        case 'text':
          choice.content += part.text;
          break;
        case 'reasoning':
          choice.reasoning += part.text;
          break;
        case 'tool_call': {
          const call = (choice.toolCalls[part.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
          if (part.id !== undefined) call.id = part.id;
          if (part.name !== undefined) call.function.name = part.name;
          call.function.arguments += part.arguments;
          break;
        }
        case 'logprobs':
          choice.logprobs.push(...part.content);
          break;
        case 'choice_end':
          choice.finishReason = part.finishReason;
          break;
      }
    }
    return {
      id: this.id,
      object: 'chat.completion',
      created: this.created,
      model: this.model,
      service_tier: this.serviceTier,
      choices: choices.map(({ content, reasoning, toolCalls, logprobs, finishReason }, index) => ({
        index,
        message: {
          ...(toolCalls.length > 0
            ? { role: 'assistant' as const, content: content === '' ? null : content, refusal: null, tool_calls: toolCalls }
            : { role: 'assistant' as const, content, refusal: null }),
          // What a reasoning model thought, where clients of OpenAI-compatible servers read it.
          ...(reasoning === '' ? {} : { reasoning_content: reasoning }),
        },
        logprobs: this.withLogprobs ? { content: logprobs, refusal: null } : null,
        finish_reason: finishReason,
      })),
      usage: ending.usage,
    };
  }

  /** The first chunk of each choice announces the role, as OpenAI's does. */
  roleChunk(choice = 0): string {
    return this.chunk({ role: 'assistant', content: '' }, null, choice);
  }

  /** The chunk that carries one output part of a stream. */
  partChunk(part: GenerationPart): string {
    switch (part.type) {
      case 'text':
        return part.choice === 0 ? this.contentChunk(part.text) : this.chunk({ content: part.text }, null, part.choice);
      case 'reasoning':
        return this.chunk({ reasoning_content: part.text }, null, part.choice);
      case 'tool_call': {
        // The first fragment of a call names it; the others carry only more of its arguments.
        const opening = part.id === undefined ? {} : { id: part.id, type: 'function' as const };
        const fn = part.name === undefined ? { arguments: part.arguments } : { name: part.name, arguments: part.arguments };
        return this.chunk({ tool_calls: [{ index: part.index, ...opening, function: fn }] }, null, part.choice);
      }
      case 'logprobs':
        // Tokens that spelled no text of their own (StreamedChatCompletion sends text with its logprobs).
        return this.textWithLogprobsChunk('', part.content, part.choice);
      case 'choice_end':
        return this.finishChunk(part.finishReason, part.choice);
    }
  }

  /** A piece of text with the log probabilities of the tokens that spelled it, as OpenAI streams them with `logprobs: true`. */
  textWithLogprobsChunk(text: string, content: TokenLogprob[], choice = 0): string {
    return this.chunk({ content: text }, null, choice, { content, refusal: null });
  }

  /** The chunk sent for every piece of text of the first choice: the hot path of a stream, so built without a generic stringify. */
  contentChunk(text: string): string {
    return `${this.contentHead}${JSON.stringify(text)}${this.contentTail}`;
  }

  finishChunk(finishReason: FinishReason, choice = 0): string {
    return this.chunk({}, finishReason, choice);
  }

  usageChunk(usage: CompletionUsage): string {
    const total: ChatCompletionChunk['usage'] = usage;
    return `${this.chunkHead},"choices":[],"usage":${JSON.stringify(total)}}`;
  }

  private chunk(delta: ChunkChoice['delta'], finishReason: FinishReason | null, index = 0, logprobs: ChunkChoice['logprobs'] = null): string {
    const choice: ChunkChoice = { index, delta, logprobs, finish_reason: finishReason };
    return `${this.chunkHead},"choices":[${JSON.stringify(choice)}]${this.includeUsage ? ',"usage":null' : ''}}`;
  }
}
