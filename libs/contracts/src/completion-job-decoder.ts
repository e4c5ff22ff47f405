import type { ChatMessage, ToolCall } from './chat-message';
import { COMPLETION_JOB_VERSION, isFinishReason } from './completion-job';
import type { CompletionJobData, ReplyLog, ReplyTo, SamplingParams, StoreAnswer, StoredAnswer } from './completion-job';
import type { LogprobsOptions, PromptCachePolicy, ToolDefinition, ToolOptions } from './generation-options';
import { aBoolean, aCount, aNumber, aString, anInteger, anObject, arrayOf, byTag, fields, oneOf, optional, satisfies, UnreadableRecordError } from './record-checks';
import { isOutputPart } from './output-parts';
import { isUsage } from './token-events';
import type { Check } from './record-checks';
import { isJsonObject } from './value-guards';

type Message<R extends ChatMessage['role']> = Extract<ChatMessage, { role: R }>;
type ContentRemoved = NonNullable<CompletionJobData['contentRemoved']>;

const ROLES = ['system', 'user', 'assistant', 'tool'] as const;
const role = oneOf(...ROLES);
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

const responseFormat = byTag('type', { text: tagged, json_object: tagged, json_schema: fields<{ name: string; schema: object }>({ name: aString, schema: anObject }) });

const replyTo = fields<ReplyTo>({
  channel: optional(aString),
  stopWhenUnheard: aBoolean,
  log: optional(fields<ReplyLog>({ key: aString, keepMs: aNumber, maxEvents: aCount })),
  leaseKey: optional(aString),
});

const store = fields<StoreAnswer>({ key: aString, field: optional(aString), ttlMs: aNumber, failuresKey: optional(aString) });

const contentRemoved = fields<ContentRemoved>({
  messages: arrayOf(fields<ContentRemoved['messages'][number]>({ role, characters: aCount })),
  characters: aCount,
  tools: optional(arrayOf(fields<NonNullable<ContentRemoved['tools']>[number]>({ name: aString, descriptionCharacters: aCount, parametersCharacters: aCount }))),
  responseFormat: optional(fields<{ schemaCharacters: number }>({ schemaCharacters: aCount })),
  stop: optional(arrayOf(aCount)),
});

/** Every field of the job, checked; `v` is read before (versions decide how the rest reads). */
const completionJob = fields<CompletionJobData>({
  v: tagged,
  completionId: aString,
  model: aString,
  replyTo,
  messages: arrayOf(chatMessage),
  sampling,
  tools: optional(tools),
  choices: optional(aCount),
  responseFormat,
  logprobs: optional(fields<LogprobsOptions>({ top: aCount })),
  promptCache: optional(fields<PromptCachePolicy>({ implicit: aBoolean, breakpoint: optional(fields<{ message: number; offset: number }>({ message: aCount, offset: aCount })) })),
  serviceTier: optional(oneOf('priority', 'default', 'flex')),
  thinking: optional(aBoolean),
  affinityKey: optional(aString),
  attemptsBefore: optional(aCount),
  store: optional(store),
  acceptedAt: aNumber,
  startDeadline: aNumber,
  contentRemoved: optional(contentRemoved),
});

/** A stored answer as the worker writes it (a stored completion's, or a batch line's). */
export const storedAnswerCheck = fields<StoredAnswer>({
  parts: arrayOf(satisfies(isOutputPart, 'an output part')),
  finishReason: satisfies(isFinishReason, 'a finish reason'),
  usage: satisfies(isUsage, 'a usage'),
});

/** Where a job's events and outcome go. */
export type ReplyAddress = Pick<CompletionJobData, 'completionId' | 'replyTo' | 'store'>;

const replyAddress = fields<ReplyAddress>({ completionId: aString, replyTo, store: optional(store) });

/** Where to tell that a job failed, read from a payload that may be unreadable otherwise; undefined when it cannot be read either. */
export function toReplyAddress(data: unknown): ReplyAddress | undefined {
  return replyAddress(data, 'job') === undefined ? (data as ReplyAddress) : undefined;
}

/** Why a worker cannot run a job: the payload is not one it reads. */
export class UnreadableJobError extends UnreadableRecordError {
  constructor(reason: string) {
    super(reason);
    this.name = 'UnreadableJobError';
  }
}

/**
 * Checks a job's payload as a worker takes it, before anything runs it: the typed job, or an
 * UnreadableJobError that says why not (malformed, a field missing, a version this worker does
 * not read). A job written before versions (no `v`) reads as version 1. Fields this version does
 * not name are kept as they are.
 */
export function toCompletionJob(data: unknown): CompletionJobData {
  if (!isJsonObject(data)) throw new UnreadableJobError('the job payload is not an object');
  const version = data.v ?? COMPLETION_JOB_VERSION;
  if (version !== COMPLETION_JOB_VERSION) {
    const written = typeof version === 'number' ? `version ${version}` : `an unknown version (${JSON.stringify(version)})`;
    throw new UnreadableJobError(`the job payload is ${written}; this worker reads version ${COMPLETION_JOB_VERSION}`);
  }
  const job = { ...data, v: version };
  const problem = completionJob(job, 'job');
  if (problem !== undefined) throw new UnreadableJobError(problem);
  return job as CompletionJobData;
}
