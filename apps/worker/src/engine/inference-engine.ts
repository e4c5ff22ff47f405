import type {
  CompletionUsage,
  EmbeddingOptions,
  EngineCapabilities,
  FinishReason,
  GenerationOptions,
  OutputSink,
  RankOptions,
  TokenizeOptions,
  ToolCall,
  UpstreamRejection,
} from '@app/contracts';

/**
 * One answer to generate: the job's options as they are (one choice of its `choices`, whose count
 * the worker handles; log probabilities go out as `logprobs` parts right after the text their
 * tokens spelled; engines without a prompt cache ignore `promptCache`), and how to run it.
 */
export interface GenerationRequest extends GenerationOptions {
  /** Aborted when nobody wants the answer any more; the engine stops and frees its slot. */
  signal: AbortSignal;
  /** Receives the output parts as they are generated; text never holds a partial stop sequence. */
  output: OutputSink;
  /** Another answer to these same messages follows (the next of `n` choices): worth keeping the prompt for. */
  anotherChoiceFollows?: boolean;
}

export interface GenerationOutcome {
  text: string;
  toolCalls?: ToolCall[];
  finishReason: FinishReason;
  usage: CompletionUsage;
}

/** One `embed` job's inputs, to be turned into one vector each. */
export interface EmbeddingRequest extends EmbeddingOptions {
  signal: AbortSignal;
  /** Receives one `embedding` part per input (the engine's vector, not normalised), in any order. */
  output: OutputSink;
}

export interface EmbeddingOutcome {
  /** Tokens of all the inputs together, as the model's tokenizer counted them. */
  promptTokens: number;
}

/** One `rank` job's documents, to be scored against its query. */
export interface RankRequest extends RankOptions {
  signal: AbortSignal;
  /** Receives one `score` part per document, in any order. */
  output: OutputSink;
}

export interface RankOutcome {
  /** Tokens of every document with the query, as the model evaluated them. */
  promptTokens: number;
}

/** One `tokenize` job: what to tokenize (or detokenize), and when to stop. */
export type TokenizeRequest = TokenizeOptions & { signal: AbortSignal };

/** Text and conversations become tokens; tokens become text. */
export type TokenizeOutcome = { tokens: number[] } | { text: string };

/**
 * One loaded model that runs jobs: generates chat completions, embeds inputs, ranks documents, as its
 * `capabilities.kinds` say; a method of a kind it does not announce is never called. The worker
 * holds exactly one.
 */
export interface InferenceEngine {
  /** What the worker announces it runs, e.g. `llama.cpp`. */
  readonly name: string;
  /** What it can honour beyond plain sampling; the API refuses requests that need more. */
  readonly capabilities: EngineCapabilities;
  /** Completions it can generate at once (its parallel sequences). */
  readonly slots: number;
  /** Tokens of prompt plus answer that fit in one sequence. */
  readonly contextSize: number;
  /**
   * Whether `generate` may fail with EngineUnavailableError (an upstream server down), which puts
   * the job back in the queue for another worker.
   */
  readonly mayBeUnavailable?: boolean;
  /** Why what the engine runs on does not answer now (a server of its own), behind the worker's readiness; undefined when it does. */
  unhealthy?(): Promise<string | undefined>;
  /** The engine's own Prometheus text (llama-server's /metrics), served beside the worker's. */
  engineMetrics?(): Promise<string>;
  generate(request: GenerationRequest): Promise<GenerationOutcome>;
  embed(request: EmbeddingRequest): Promise<EmbeddingOutcome>;
  rank(request: RankRequest): Promise<RankOutcome>;
  tokenize(request: TokenizeRequest): Promise<TokenizeOutcome>;
  close(): Promise<void>;
}

export const INFERENCE_ENGINE = Symbol('INFERENCE_ENGINE');

/** Prompt plus requested answer do not fit in the model's context; the message says how (OpenAI's wording). */
export class ContextLengthExceededError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ContextLengthExceededError';
  }
}

/** An input to embed that does not fit the context, in OpenAI's words for it. */
export function inputTooLong(contextSize: number, inputTokens: number): ContextLengthExceededError {
  return new ContextLengthExceededError(
    `This model's maximum context length is ${contextSize} tokens, however you requested ${inputTokens} tokens (${inputTokens} in your prompt; 0 for the completion). Please reduce your prompt; or completion length.`,
  );
}

/** OpenAI's words for a request that does not fit: `however` says what did not. */
const contextLengthMessage = (contextSize: number, however: string): string =>
  `This model's maximum context length is ${contextSize} tokens. However, ${however}. Please reduce the length of the messages or completion.`;

/**
 * The most tokens the answer may have: max_tokens, or without it the rest of the context
 * (finish_reason "length"). A max_tokens that does not fit is refused, not shortened, and so is a
 * prompt that leaves less than `minimumRoom` tokens free.
 */
export function answerBudget(contextSize: number, promptTokens: number, maxTokens: number | undefined, minimumRoom = 1): number {
  const room = contextSize - promptTokens;
  if (room >= minimumRoom && (maxTokens ?? 0) <= room) return maxTokens ?? room;
  const however =
    room > 0 && room < minimumRoom
      ? `your messages resulted in ${promptTokens} tokens, and this engine needs at least ${minimumRoom} more for the completion`
      : maxTokens === undefined
        ? `your messages resulted in ${promptTokens} tokens`
        : `you requested ${promptTokens + maxTokens} tokens (${promptTokens} in the messages, ${maxTokens} in the completion)`;
  throw new ContextLengthExceededError(contextLengthMessage(contextSize, however));
}

/** The job asks for something this engine cannot honour exactly (the API refuses such jobs first). */
export class UnsupportedOptionError extends Error {
  /**
   * @param param the request field, as the client named it (OpenAI's `param`)
   * @param detail what about it, when more than the field itself
   */
  constructor(
    engine: string,
    readonly param: string,
    detail?: string,
  ) {
    super(`The engine serving this model (${engine}) cannot honour ${detail ?? param}.`);
    this.name = 'UnsupportedOptionError';
  }
}

/** Generation stopped because its signal was aborted. */
export class GenerationAbortedError extends Error {
  constructor() {
    super('generation aborted');
    this.name = 'GenerationAbortedError';
  }
}

/**
 * The engine could not begin this generation and wrote no output: its upstream server refused the
 * connection, failed (5xx), was overloaded (429) or kept silent too long. Nothing reached the
 * client, so another worker may run the job as if this one had crashed.
 */
export class EngineUnavailableError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'EngineUnavailableError';
  }
}

/** The upstream server refused the request itself (a 4xx): the client gets its answer as the upstream gave it. */
export class UpstreamRejectedError extends Error {
  constructor(
    message: string,
    readonly rejection: UpstreamRejection,
  ) {
    super(message);
    this.name = 'UpstreamRejectedError';
  }
}
