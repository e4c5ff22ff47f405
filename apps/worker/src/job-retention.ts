import { Logger } from '@nestjs/common';
import { decodeCompletionJob } from '@app/contracts';
import type {
  ChatRole,
  CompletionJobData,
  CompletionResult,
  EmbeddingOptions,
  RankOptions,
  GenerationOptions,
  JobOf,
  ResponseFormat,
  TokenizeOptions,
  ToolDefinition,
} from '@app/contracts';
import { UnrecoverableError } from 'bullmq';
import type { Worker } from 'bullmq';

/**
 * What the retention records on a job whose contents it removed: what the job held, without the
 * text. It is the retention's own record, kept beside the command in the job's data (where
 * operators see it in Bull Board) but no part of the command: no API writes it and only the
 * retention reads it, to know that a job which comes back with it has ended already.
 */
export type ContentRemoved = GenerationContentRemoved | EmbeddingContentRemoved;

/** Of a `generate` job. */
export interface GenerationContentRemoved {
  /** Each message's role and length in characters, in order. */
  messages: Array<{ role: ChatRole; characters: number }>;
  characters: number;
  /**
   * Each offered tool, in order: its name (kept in `options.tools` too), and the characters of its
   * description and of its parameters' schema as JSON, which `options.tools` no longer holds.
   */
  tools?: Array<{ name: string; descriptionCharacters: number; parametersCharacters: number }>;
  /** The characters of a `json_schema` response format's schema as JSON (its name stays in `options.responseFormat`). */
  responseFormat?: { schemaCharacters: number };
  /** Each stop string's length, in order (`options.sampling.stop` is then empty). */
  stop?: number[];
  /** A plain-prompt job's prompts: each one's length, in characters (text) or tokens (token ids), in order. */
  prompts?: InputSize[];
}

/** Of an `embed` job (and of a `tokenize` job, its one input): each input's length, in characters (text) or tokens (token ids), in order. */
export interface EmbeddingContentRemoved {
  inputs: InputSize[];
  characters: number;
}

/** A job's data as the retention leaves it: the command without its words, and the record of what went. */
export type RetainedJobData = CompletionJobData & { contentRemoved?: ContentRemoved };

/** What the retention needs of a BullMQ job: its data, and a way to rewrite it. */
export interface RetainedJob {
  data: RetainedJobData;
  updateData(data: RetainedJobData): Promise<void>;
}

type Process<J extends RetainedJob> = (job: J, token?: string, signal?: AbortSignal) => Promise<CompletionResult>;

/** What a tool keeps: its name, and an empty schema in place of its parameters'. */
function toolWithoutContent({ name }: ToolDefinition): ToolDefinition {
  return { name, parameters: {} };
}

/** What a response format keeps: its type, and for `json_schema` its name and an empty schema. */
function formatWithoutContent(format: ResponseFormat): ResponseFormat {
  return format.type === 'json_schema' ? { type: 'json_schema', name: format.name, schema: {} } : format;
}

/** An input's size: its characters (text) or its tokens (token ids). */
type InputSize = { characters: number } | { tokens: number };

const sizeOf = (input: string | number[]): InputSize => (typeof input === 'string' ? { characters: input.length } : { tokens: input.length });

const charactersOf = (sizes: InputSize[]): number => sizes.reduce((sum, size) => sum + ('characters' in size ? size.characters : 0), 0);

/** What the options held, in sizes: the retention's record of the contents it removes. */
function contentRemovedFrom({ messages: held, prompt, tools, responseFormat, sampling }: GenerationOptions): GenerationContentRemoved {
  const messages = held.map(({ role, content }) => ({ role, characters: content.length }));
  const prompts = prompt?.inputs.map(sizeOf);
  return {
    messages,
    characters: messages.reduce((sum, message) => sum + message.characters, 0) + charactersOf(prompts ?? []),
    ...(prompts ? { prompts } : {}),
    ...(tools
      ? {
          tools: tools.definitions.map(({ name, description, parameters }) => ({
            name,
            descriptionCharacters: description?.length ?? 0,
            parametersCharacters: JSON.stringify(parameters).length,
          })),
        }
      : {}),
    ...(responseFormat?.type === 'json_schema' ? { responseFormat: { schemaCharacters: JSON.stringify(responseFormat.schema).length } } : {}),
    stop: sampling.stop.map((stop) => stop.length),
  };
}

/**
 * The job's data without the words: each message's role and length stay, its text goes; tools
 * keep their names, the response format its name, the stop strings their count and lengths.
 * Ids, model, schedule and the numbers of the sampling settings stay as they were.
 */
export function withoutContent(data: RetainedJobData): RetainedJobData {
  if (data.contentRemoved) return data;
  if (data.kind === 'embed') return embeddingWithoutContent(data);
  if (data.kind === 'rank') return rankingWithoutContent(data);
  if (data.kind === 'tokenize') return tokenizingWithoutContent(data);
  const { options } = data;
  const { tools, responseFormat, sampling } = options;
  return {
    ...data,
    options: {
      ...options,
      messages: [],
      ...(options.prompt ? { prompt: { ...options.prompt, inputs: [] } } : {}),
      sampling: { ...sampling, stop: [] },
      ...(tools ? { tools: { ...tools, definitions: tools.definitions.map(toolWithoutContent) } } : {}),
      ...(responseFormat ? { responseFormat: formatWithoutContent(responseFormat) } : {}),
    },
    contentRemoved: contentRemovedFrom(options),
  };
}

/** An `embed` job without its inputs: their count and sizes stay. */
function embeddingWithoutContent(data: JobOf<'embed'>): RetainedJobData {
  const inputs = data.options.inputs.map(sizeOf);
  const characters = charactersOf(inputs);
  const options: EmbeddingOptions = { inputs: [] };
  return { ...data, options, contentRemoved: { inputs, characters } };
}

/** A `rank` job without its query and documents: their sizes stay. */
function rankingWithoutContent(data: JobOf<'rank'>): RetainedJobData {
  const { query, documents } = data.options;
  const inputs = [query, ...documents].map((text) => ({ characters: text.length }));
  const options: RankOptions = { query: '', documents: [] };
  return { ...data, options, contentRemoved: { inputs, characters: inputs.reduce((sum, input) => sum + input.characters, 0) } };
}

/** A `tokenize` job without its text, conversation or tokens: their size stays. */
function tokenizingWithoutContent(data: JobOf<'tokenize'>): RetainedJobData {
  const { options } = data;
  const input =
    options.of === 'tokens'
      ? { tokens: options.tokens.length }
      : { characters: options.of === 'text' ? options.text.length : options.conversation.messages.reduce((sum, message) => sum + message.content.length, 0) };
  const emptied: TokenizeOptions = { of: 'tokens', tokens: [] };
  return { ...data, options: emptied, contentRemoved: { inputs: [input], characters: input.characters ?? 0 } };
}

/** The job's return value without the answer's text or call arguments; names, finish reason and usage stay. */
export function resultWithoutContent(result: CompletionResult): CompletionResult {
  if (result.contentRemoved) return result;
  const argumentCharacters = (result.toolCalls ?? []).reduce((sum, call) => sum + call.arguments.length, 0);
  const toolCalls = result.toolCalls?.map((call) => ({ ...call, arguments: '' }));
  const choices = result.choices?.map((choice) => resultWithoutContent({ ...choice, usage: result.usage }));
  const choiceCharacters = (choices ?? []).slice(1).reduce((sum, choice) => sum + (choice.contentRemoved?.characters ?? 0), 0);
  return {
    ...result,
    text: '',
    ...(toolCalls ? { toolCalls } : {}),
    ...(choices
      ? { choices: choices.map(({ text, toolCalls: calls, finishReason }) => ({ text, ...(calls ? { toolCalls: calls } : {}), finishReason })) }
      : {}),
    contentRemoved: { characters: result.text.length + argumentCharacters + choiceCharacters },
  };
}

/** Why a job that comes back without its contents fails unrun. */
export const ENDED_BEFORE = 'The job had ended already (its worker stopped before the queue recorded it); it is not run again.';

/**
 * RETAIN_CONTENT for the jobs a worker ends. Finished jobs stay in Redis for operators (Bull
 * Board shows their data and return value); unless contents are to be kept, a job that ends,
 * answered or failed, keeps ids, sizes, timings, finish reason, usage and error, and no
 * message text or answer text. A job is rewritten only once it has ended for good: until then
 * a retry still needs its messages.
 */
export class JobRetention {
  private readonly logger = new Logger('JobRetention');

  constructor(private readonly retainContent: boolean) {}

  /**
   * Wraps the queue worker's processor. Unless contents are retained, the answer's text never
   * reaches Redis: the return value BullMQ stores (on the job and in its event stream) is already
   * without it. The rewrite is sent, not awaited: BullMQ records the job's end (and takes the next
   * job) with a command it sends after the processor returns, on the same connection, and Redis
   * runs one connection's commands in order, so the end still comes after the rewrite, and the
   * next job one round trip sooner.
   */
  around<J extends RetainedJob>(process: Process<J>): Process<J> {
    return async (job, token, signal) => {
      // Contents go only once a job has ended for good, answered or failed. A job that comes back
      // without them (on any worker, whatever its RETAIN_CONTENT) had its worker die after that
      // and before BullMQ recorded the end: its client has had its answer (or error), and its
      // messages are gone, so it is not run again.
      if (job.data.contentRemoved) throw new UnrecoverableError(ENDED_BEFORE);
      if (this.retainContent) return process(job, token, signal);
      try {
        const result = await process(job, token, signal);
        void this.removeContent(job);
        return resultWithoutContent(result);
      } catch (error) {
        // Final (every failure is, today): rewritten before BullMQ stores the failure. Any other
        // error may be retried, and a retry needs the messages; `watch` sees its final failure.
        if (error instanceof UnrecoverableError) void this.removeContent(job);
        throw error;
      }
    };
  }

  /**
   * Jobs that fail for good with their messages still in them: those BullMQ fails without
   * running them (stalled more often than allowed, their workers having died), and any whose
   * last retry failed. `finishedOn` is set only on a failure that is not retried.
   */
  watch(worker: Worker<RetainedJobData, CompletionResult>): void {
    if (this.retainContent) return;
    worker.on('failed', (job) => {
      if (job?.finishedOn && !job.data.contentRemoved) void this.removeContent(job);
    });
  }

  /**
   * A job whose data cannot be rewritten (Redis gone) still ends as it would have: logged, not
   * failed. One that `watch` sees fail unrun may hold a payload as an older API wrote it: it is
   * read as the worker reads jobs first (and left alone when it cannot be).
   */
  private async removeContent(job: RetainedJob): Promise<void> {
    try {
      await job.updateData(withoutContent(decodeCompletionJob(job.data)));
    } catch (error) {
      this.logger.warn(`could not remove the contents of job ${job.data.id}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}
