import type { ChatMessage, ChatRole, ToolCall } from './chat-message';
import type { LogprobsOptions, PromptCachePolicy, ResponseFormat, ToolOptions } from './generation-options';
import type { OutputPart } from './output-parts';
import type { ServiceTier } from './service-tiers';

/** Sampling settings as the engine applies them, already defaulted and validated by the API. */
export interface SamplingParams {
  temperature: number;
  topP: number;
  /** Upper bound on generated tokens; absent means "until the context is full". */
  maxTokens?: number;
  stop: string[];
  frequencyPenalty: number;
  presencePenalty: number;
  /** Always set: the client's seed, or one drawn by the API, so a retried job samples the same way. */
  seed: number;
  /** Added to these tokens' logits before sampling (OpenAI's `logit_bias`; -100 bans a token). */
  logitBias?: Array<{ token: number; bias: number }>;
}

/**
 * Where a job's events go and what it means when nobody hears them. The worker publishes to
 * whatever the job names, so the reply path (a channel per API instance today; batch results or
 * stored completions later) changes without touching engines.
 */
export interface ReplyTo {
  /**
   * The sharded pub/sub channel (SPUBLISH) that carries the events; absent when nobody follows
   * them live (a batch line, whose outcome is all that is kept).
   */
  channel?: string;
  /**
   * An interactive reply that reaches no subscriber means its API instance is gone: the worker
   * stops generating. Batch and background replies must set this false.
   */
  stopWhenUnheard: boolean;
  /**
   * A resumable reply: every event is also appended to this Redis Stream, so a client that lost
   * its connection (or its API instance) can read what it missed on any instance.
   */
  log?: ReplyLog;
  /**
   * Generation goes on only while this key exists: the API instance following the completion for
   * a client keeps it alive, and it expires a grace period after the last one left. Absent: no
   * reader is needed (a background answer that is stored).
   */
  leaseKey?: string;
}

export interface ReplyLog {
  /** The Redis Stream (XADD) the events go to, each as one field `e` holding the encoded event. */
  key: string;
  /** The stream lives this long after its last event. */
  keepMs: number;
  /** The stream is trimmed to about this many events (XADD MAXLEN ~). */
  maxEvents: number;
}

/**
 * Where the worker keeps the whole answer of a completion that outlives its request: one the
 * client asked to store, or a batch line (whose coordinator counts the outcomes of its lines).
 */
export interface StoreAnswer {
  /** The key that receives a `StoredAnswer` as JSON: a string (SET), or with `field` a hash (HSET). */
  key: string;
  field?: string;
  ttlMs: number;
  /** A hash that receives, under `field`, a `CompletionFailure` when the job ends in an error. */
  failuresKey?: string;
}

/** A stored answer: its output parts in order (adjacent ones merged) and how it ended. */
export interface StoredAnswer {
  parts: OutputPart[];
  finishReason: FinishReason;
  usage: CompletionUsage;
}

/**
 * The version of the job payload the API writes. A worker runs the versions it reads and fails
 * any other unrun (toCompletionJob); a job without `v` was written before versions, as version 1.
 */
export const COMPLETION_JOB_VERSION = 1;

/** The payload of one chat completion job; the job id is the completion id. */
export interface CompletionJobData {
  v: typeof COMPLETION_JOB_VERSION;
  completionId: string;
  model: string;
  replyTo: ReplyTo;
  messages: ChatMessage[];
  sampling: SamplingParams;
  /** Functions the model may call; absent when the request offers none. */
  tools?: ToolOptions;
  /** Choices to generate (OpenAI's `n`); absent means one. */
  choices?: number;
  responseFormat: ResponseFormat;
  /** Log probabilities of the generated tokens; absent when not asked for. */
  logprobs?: LogprobsOptions;
  /**
   * false: a reasoning model answers without thinking (`reasoning_effort` `none` or `minimal`, as
   * llama.cpp's server reads them); absent: it thinks as its chat template does by default.
   */
  thinking?: boolean;
  /** What of the prompt to keep for later requests; absent means the whole conversation and its answer. */
  promptCache?: PromptCachePolicy;
  /**
   * What places the job where its prompt's start is cached: jobs with one key go back to the worker
   * that served the key last. A front door sets it from the client's `prompt_cache_key` (the
   * Responses door also from the response it continues); absent, the API's placement hashes the
   * conversation's start instead. Workers do not read it.
   */
  affinityKey?: string;
  /**
   * Attempts the job had started before it was moved to this queue (from a dead worker's own
   * queue, see workerQueueName): a worker numbers its attempt after them, so the API tells the new
   * attempt's events from the dead one's. Absent: none.
   */
  attemptsBefore?: number;
  /** How the job was placed in its queue (OpenAI's `service_tier`, as granted to its key); absent on a batch line. */
  serviceTier?: ServiceTier;
  /** Set when the client asked to store the answer (`store: true`). */
  store?: StoreAnswer;
  /** Unix milliseconds when the API accepted the request. */
  acceptedAt: number;
  /**
   * Unix milliseconds after which nobody waits for this job to start: the API has answered
   * "no capacity" by then, so a worker that picks it up later drops it unrun.
   */
  startDeadline: number;
  /**
   * Set once the job has ended on a worker that keeps no contents (RETAIN_CONTENT=false):
   * `messages` is then empty, and this says what it held, without the text.
   */
  contentRemoved?: {
    /** Each message's role and length in characters, in order. */
    messages: Array<{ role: ChatRole; characters: number }>;
    characters: number;
    /**
     * Each offered tool, in order: its name (kept in `tools` too), and the characters of its
     * description and of its parameters' schema as JSON, which `tools` no longer holds.
     */
    tools?: Array<{ name: string; descriptionCharacters: number; parametersCharacters: number }>;
    /** The characters of a `json_schema` response format's schema as JSON (its name stays in `responseFormat`). */
    responseFormat?: { schemaCharacters: number };
    /** Each stop string's length, in order (`sampling.stop` is then empty). */
    stop?: number[];
  };
}

/** A job as the API builds it from a request, before the reply path is chosen and its version stamped. */
export type CompletionJobInput = Omit<CompletionJobData, 'replyTo' | 'v'>;

/** OpenAI's finish reasons that this service produces. */
const FINISH_REASON_LIST = ['stop', 'length', 'tool_calls'] as const;
export type FinishReason = (typeof FINISH_REASON_LIST)[number];

const FINISH_REASONS: ReadonlySet<unknown> = new Set(FINISH_REASON_LIST);

export const isFinishReason = (value: unknown): value is FinishReason => FINISH_REASONS.has(value);

export interface CompletionUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** Prompt tokens the engine had evaluated already (llama.cpp's prompt cache, or an upstream's). */
  prompt_tokens_details?: { cached_tokens: number };
  /** Of the completion tokens, those a reasoning model spent thinking (its `reasoning_content`). */
  completion_tokens_details?: { reasoning_tokens: number };
}

/** One choice of an answer. */
export interface ChoiceResult {
  text: string;
  toolCalls?: ToolCall[];
  finishReason: FinishReason;
}

/**
 * The job's return value: the whole answer, for operators and for clients that reconnect. The
 * first choice is at the top level; with `n` > 1, `choices` holds every choice, in order.
 */
export interface CompletionResult {
  choices?: ChoiceResult[];
  text: string;
  /** The calls the model made, arguments complete; absent when it made none. */
  toolCalls?: ToolCall[];
  finishReason: FinishReason;
  usage: CompletionUsage;
  /** Set (and `text` empty) when the worker keeps no contents (RETAIN_CONTENT=false). */
  contentRemoved?: { characters: number };
}
