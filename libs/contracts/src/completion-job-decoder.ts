import type { ChatMessage, ToolCall } from './chat-message';
import { COMPLETION_JOB_VERSION, isFinishReason, JOB_KINDS } from './completion-job';
import type { CompletionJobData, JobKind, JobOf, JobSchedule, ReplyLog, ReplyTo, StoreAnswer, StoredAnswer } from './completion-job';
import type { EmbeddingOptions } from './embedding-options';
import type { RankOptions } from './rank-options';
import type { TokenizeOptions } from './tokenize-options';
import type { GenerationOptions, LogprobsOptions, PlainPrompt, PromptCachePolicy, SamplingParams, ToolDefinition, ToolOptions } from './generation-options';
import type { ServiceTier } from './service-tiers';
import {
  anyOf,
  aBoolean,
  aCount,
  aNumber,
  aString,
  anInteger,
  anObject,
  arrayOf,
  byTag,
  fields,
  oneOf,
  optional,
  satisfies,
  UnreadableRecordError,
} from './record-checks';
import { isOutputPart } from './output-parts';
import { isUsage } from './token-events';
import type { Check } from './record-checks';
import { isJsonObject } from './value-guards';

type Message<R extends ChatMessage['role']> = Extract<ChatMessage, { role: R }>;

/** A field whose value the variant's tag has settled already. */
const tagged: Check = () => undefined;

const toolCall = fields<ToolCall>({ id: aString, name: aString, arguments: aString });

const plainMessage = fields<Message<'system' | 'user'>>({ role: tagged, content: aString });
const chatMessage = byTag('role', {
  system: plainMessage,
  user: plainMessage,
  assistant: fields<Message<'assistant'>>({ role: tagged, content: aString, toolCalls: optional(arrayOf(toolCall)), reasoning: optional(aString) }),
  tool: fields<Message<'tool'>>({ role: tagged, content: aString, toolCallId: aString }),
});

const sampling = fields<SamplingParams>({
  temperature: aNumber,
  topP: aNumber,
  maxTokens: optional(aCount),
  stop: arrayOf(aString),
  frequencyPenalty: aNumber,
  presencePenalty: aNumber,
  seed: anInteger,
  logitBias: optional(arrayOf(fields<{ token: number; bias: number }>({ token: aCount, bias: aNumber }))),
});

const tools = fields<ToolOptions>({
  definitions: arrayOf(fields<ToolDefinition>({ name: aString, description: optional(aString), parameters: anObject })),
  choice: byTag('type', { none: tagged, auto: tagged, required: tagged, function: fields<{ name: string }>({ name: aString }) }),
  parallel: aBoolean,
});

const responseFormat = byTag('type', {
  text: tagged,
  json_object: tagged,
  json_schema: fields<{ name: string; schema: object }>({ name: aString, schema: anObject }),
});

const replyTo = fields<ReplyTo>({
  channel: optional(aString),
  stopWhenUnheard: aBoolean,
  log: optional(fields<ReplyLog>({ key: aString, keepMs: aNumber, maxEvents: aCount })),
  leaseKey: optional(aString),
});

const store = fields<StoreAnswer>({ key: aString, field: optional(aString), ttlMs: aNumber, failuresKey: optional(aString) });

const tier = oneOf('priority', 'default', 'flex');

const options = fields<GenerationOptions>({
  messages: arrayOf(chatMessage),
  prompt: optional(
    fields<PlainPrompt>({ inputs: arrayOf(anyOf('a string or token ids', aString, arrayOf(aCount))), echo: aBoolean, suffix: optional(aString) }),
  ),
  sampling,
  tools: optional(tools),
  choices: optional(aCount),
  responseFormat: optional(responseFormat),
  logprobs: optional(fields<LogprobsOptions>({ top: aCount })),
  thinking: optional(aBoolean),
  truncation: optional(oneOf('auto')),
  promptCache: optional(
    fields<PromptCachePolicy>({ implicit: aBoolean, breakpoint: optional(fields<{ message: number; offset: number }>({ message: aCount, offset: aCount })) }),
  ),
});

const schedule = fields<JobSchedule>({
  acceptedAt: aNumber,
  startDeadline: aNumber,
  tier: optional(tier),
  affinityKey: optional(aString),
  attemptsBefore: optional(aCount),
});

const embeddingOptions = fields<EmbeddingOptions>({ inputs: arrayOf(anyOf('a string or token ids', aString, arrayOf(aCount))) });

const rankOptions = fields<RankOptions>({ query: aString, documents: arrayOf(aString) });

/** A job of one kind, every field checked; `v` and `kind` are read before (they decide how the rest reads). */
const jobOf = <K extends JobKind>(kindOptions: Check) =>
  fields<JobOf<K>>({ v: tagged, kind: tagged, id: aString, model: aString, options: kindOptions, replyTo, schedule, store: optional(store) });

type Of<O extends TokenizeOptions['of']> = Extract<TokenizeOptions, { of: O }>;
const tokenizeOptions = byTag('of', {
  text: fields<Of<'text'>>({ of: tagged, text: aString, specialTokens: aBoolean }),
  conversation: fields<Of<'conversation'>>({
    of: tagged,
    conversation: fields<Of<'conversation'>['conversation']>({ messages: arrayOf(chatMessage), tools: optional(tools), thinking: optional(aBoolean) }),
  }),
  tokens: fields<Of<'tokens'>>({ of: tagged, tokens: arrayOf(aCount) }),
} satisfies Record<TokenizeOptions['of'], Check>);

const completionJob = byTag('kind', {
  generate: jobOf<'generate'>(options),
  embed: jobOf<'embed'>(embeddingOptions),
  rank: jobOf<'rank'>(rankOptions),
  tokenize: jobOf<'tokenize'>(tokenizeOptions),
} satisfies Record<JobKind, Check>);

/** A job as version 1 wrote it: one flat object, the completion's id in `completionId`. */
interface CompletionJobV1 extends GenerationOptions, Omit<JobSchedule, 'tier' | 'attemptsBefore'> {
  completionId: string;
  model: string;
  replyTo: ReplyTo;
  serviceTier?: ServiceTier;
  store?: StoreAnswer;
  /** Set by a version-1 worker's retention once the job had ended: its contents are gone. */
  contentRemoved?: Record<string, unknown>;
}

const completionJobV1 = fields<Omit<CompletionJobV1, keyof GenerationOptions>>({
  completionId: aString,
  model: aString,
  replyTo,
  serviceTier: optional(tier),
  affinityKey: optional(aString),
  store: optional(store),
  acceptedAt: aNumber,
  startDeadline: aNumber,
  contentRemoved: optional(anObject),
});

/** The object without its absent fields, as a job written as JSON holds it. */
const present = <T extends object>(value: T): T => Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined)) as T;

/** A version-1 job, still queued when the API moved to version 2, in the shape this worker runs. */
function fromVersion1(data: Record<string, unknown>): CompletionJobData {
  const problem = completionJobV1(data, 'job') ?? options(data, 'job');
  if (problem !== undefined) throw new UnreadableJobError(problem);
  const job = data as unknown as CompletionJobV1;
  const { messages, sampling, tools, choices, responseFormat, logprobs, thinking, promptCache } = job;
  return {
    v: COMPLETION_JOB_VERSION,
    kind: 'generate',
    id: job.completionId,
    model: job.model,
    options: present({ messages, sampling, tools, choices, responseFormat, logprobs, thinking, promptCache }),
    replyTo: job.replyTo,
    schedule: present({ acceptedAt: job.acceptedAt, startDeadline: job.startDeadline, tier: job.serviceTier, affinityKey: job.affinityKey }),
    ...(job.store ? { store: job.store } : {}),
    // The worker's retention record, which it reads (a job that has it ended already); not the command's.
    ...(job.contentRemoved ? { contentRemoved: job.contentRemoved } : {}),
  };
}

/** A stored answer as the worker writes it (a stored completion's, or a batch line's). */
export const storedAnswerCheck = fields<StoredAnswer>({
  parts: arrayOf(satisfies(isOutputPart, 'an output part')),
  finishReason: satisfies(isFinishReason, 'a finish reason'),
  usage: satisfies(isUsage, 'a usage'),
});

/** Where a job's events and outcome go. */
export type ReplyAddress = Pick<CompletionJobData, 'id' | 'replyTo' | 'store'>;

const replyAddress = fields<ReplyAddress>({ id: aString, replyTo, store: optional(store) });
const replyAddressV1 = fields<Pick<CompletionJobV1, 'completionId' | 'replyTo' | 'store'>>({ completionId: aString, replyTo, store: optional(store) });

/**
 * Where to tell that a job failed, read from a payload that may be unreadable otherwise (of any
 * version that names its id `id`, or of version 1); undefined when it cannot be read either.
 */
export function toReplyAddress(data: unknown): ReplyAddress | undefined {
  if (replyAddress(data, 'job') === undefined) return data as ReplyAddress;
  if (replyAddressV1(data, 'job') !== undefined) return undefined;
  const { completionId, replyTo, store: answer } = data as CompletionJobV1;
  return { id: completionId, replyTo, ...(answer ? { store: answer } : {}) };
}

/** Why a worker cannot run a job: the payload is not one it reads. */
export class UnreadableJobError extends UnreadableRecordError {
  constructor(reason: string) {
    super(reason);
    this.name = 'UnreadableJobError';
  }
}

/** A job of a kind this version knows but the worker's engine does not run (its model embeds only, say). */
export class UnservedKindError extends UnreadableJobError {
  constructor(
    reason: string,
    readonly kind: JobKind,
  ) {
    super(reason);
    this.name = 'UnservedKindError';
  }
}

/**
 * Checks a job's payload as a worker takes it, before anything runs it: the typed job, or an
 * UnreadableJobError that says why not (malformed, a field missing, a version this worker does
 * not read, a kind its engine does not run: `runs`, by default every kind this version knows).
 * Versions 1 (and a job written before versions, without `v`) and 2 are read into this version's
 * shape, as `generate` jobs. Fields this version does not name are kept as they are.
 */
export function decodeCompletionJob(data: unknown, runs: readonly JobKind[] = JOB_KINDS): CompletionJobData {
  if (!isJsonObject(data)) throw new UnreadableJobError('the job payload is not an object');
  const version = data.v ?? 1;
  const job = version === 1 ? fromVersion1(data) : version === 2 ? { ...data, v: COMPLETION_JOB_VERSION, kind: 'generate' } : data;
  if (version !== 1 && version !== 2 && version !== COMPLETION_JOB_VERSION) {
    const written = typeof version === 'number' ? `version ${version}` : `an unknown version (${JSON.stringify(version)})`;
    throw new UnreadableJobError(`the job payload is ${written}; this worker reads versions 1 to ${COMPLETION_JOB_VERSION}`);
  }
  if (!runs.includes(job.kind as JobKind)) {
    const kind = typeof job.kind === 'string' ? `'${job.kind}'` : JSON.stringify(job.kind ?? null);
    const reason = `the job is of kind ${kind}; this worker runs ${runs.length > 0 ? `${runs.join(', ')} jobs` : 'no kind of job'}`;
    throw JOB_KINDS.includes(job.kind as JobKind) ? new UnservedKindError(reason, job.kind as JobKind) : new UnreadableJobError(reason);
  }
  const problem = completionJob(job, 'job');
  if (problem !== undefined) throw new UnreadableJobError(problem);
  return job as unknown as CompletionJobData;
}
