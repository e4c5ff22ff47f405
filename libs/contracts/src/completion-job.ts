import type { ToolCall } from './chat-message';
import type { EmbeddingOptions } from './embedding-options';
import type { GenerationOptions } from './generation-options';
import type { TokenizeOptions } from './tokenize-options';
import type { OutputPart } from './output-parts';
import type { RankOptions } from './rank-options';
import type { ServiceTier } from './service-tiers';

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
 * The version of the job payload the API writes. A worker runs the versions it reads (this one,
 * and versions 1 and 2, which it reads into this shape as `generate` jobs) and fails any other
 * unrun (decodeCompletionJob). Version 3 names the job's kind.
 */
export const COMPLETION_JOB_VERSION = 3;

/**
 * What a job asks of its engine; each kind has its own options (JobOptions) and output parts:
 * `generate`, a conversation answered (text, calls, log probabilities); `embed`, one vector per
 * input (`embedding` parts); `rank`, a relevance score per document for a query (`score` parts);
 * `tokenize`, text or a conversation in tokens (a `tokens` part), or tokens in text (a `text` part). A worker runs the kinds its engine announces
 * (EngineCapabilities.kinds) and fails any other unrun; the API refuses, before it queues
 * anything, a kind that a live worker of the model does not run. A new kind joins this list and
 * JobOptions with its options and its output parts (a worker of this version fails it unrun).
 */
export const JOB_KINDS = ['generate', 'embed', 'rank', 'tokenize'] as const;
export type JobKind = (typeof JOB_KINDS)[number];

/** The options of each kind of job. */
export interface JobOptions {
  generate: GenerationOptions;
  embed: EmbeddingOptions;
  rank: RankOptions;
  tokenize: TokenizeOptions;
}

/** When and where a job runs: what admission and placement decided, read by the queue's side only. */
export interface JobSchedule {
  /** Unix milliseconds when the API accepted the request. */
  acceptedAt: number;
  /**
   * Unix milliseconds after which nobody waits for this job to start: the API has answered
   * "no capacity" by then, so a worker that picks it up later drops it unrun.
   */
  startDeadline: number;
  /** How the job was placed in its queue (OpenAI's `service_tier`, as granted to its key); absent on a batch line. */
  tier?: ServiceTier;
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
}

/**
 * One completion to run, as a front door hands it to the queue: what to do (its `kind`, and
 * `options`, taken by every engine as they are), where the events go, when and where it runs,
 * and where its answer is kept. The job id is `id`, the completion's id.
 */
export type CompletionJobData = { [K in JobKind]: JobOf<K> }[JobKind];

/** A job of one kind. */
export interface JobOf<K extends JobKind> {
  v: typeof COMPLETION_JOB_VERSION;
  kind: K;
  id: string;
  model: string;
  options: JobOptions[K];
  replyTo: ReplyTo;
  schedule: JobSchedule;
  /** Set when the client asked to store the answer (`store: true`), and on a batch line. */
  store?: StoreAnswer;
}

/** A job as the API builds it from a request, before the reply path is chosen and its version stamped. */
export type JobInputOf<K extends JobKind> = Omit<JobOf<K>, 'replyTo' | 'v'>;
export type CompletionJobInput = { [K in JobKind]: JobInputOf<K> }[JobKind];
/** A `generate` job as a chat or Responses door builds it. */
export type GenerateJobInput = JobInputOf<'generate'>;

/** Whether a job generates (the kind whose options carry messages, sampling and tools). */
export const isGenerateJob = <J extends { kind: JobKind }>(job: J): job is Extract<J, { kind: 'generate' }> => job.kind === 'generate';

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

/** The job with the service tier it was granted at admission (a front door maps the request before the tier is known). */
export const withTier = <J extends CompletionJobInput>(job: J, tier: ServiceTier): J => ({ ...job, schedule: { ...job.schedule, tier } });
