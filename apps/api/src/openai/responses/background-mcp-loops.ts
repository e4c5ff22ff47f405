import { Inject, Injectable, Logger } from '@nestjs/common';
import type { BeforeApplicationShutdown, OnApplicationBootstrap } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { cancellationsChannel, isRecord } from '@app/contracts';
import type { GenerateJobInput } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import type { Job } from 'bullmq';
import { Counter } from 'prom-client';
import type { FastifyReply } from 'fastify';
import { COMMANDS_REDIS } from '../../redis/api-redis.module';
import { ApiMetrics } from '../../observability/api-metrics';
import { CompletionQueues } from '../../pipeline/completion-queues';
import type { CompletionEnding } from '../../pipeline/completion-runner';
import { CompletionUseCase } from '../../pipeline/completion-use-case';
import { redisUnavailable } from '../../pipeline/completion-admission';
import { toOpenAiError } from '../../errors/http-error-mapping';
import { SseResponse } from '../common/sse-response';
import { cancelledError } from './background-responses';
import { CancelMessages } from './cancel-messages';
import { CompactionSeal } from './compaction-seal';
import { applyEnd, LoopReplay } from './mcp-loop-replay';
import type { LoopPosition } from './mcp-loop-replay';
import { LoopStepLogs, LoopTakenOver } from './mcp-loop-steps';
import type { LoopStep, LoopStepWriter } from './mcp-loop-steps';
import { McpToolLoop } from './mcp-tool-loop';
import type { McpResponseTools, TurnOutcome } from './mcp-tool-loop';
import { responseObject } from './response-object';
import { ResponseLoopQueue } from './response-loop-queue';
import type { LoopJobData, RunningLoopWorker } from './response-loop-queue';
import type { CreateResponseDto } from './responses-request.dto';
import type { ConversationItem } from './response-items';
import { toResponseJob } from './responses-job.mapper';
import { addedUsage, CollectedResponse, NO_USAGE, StreamedResponse } from './responses-replies';
import type { CutShortBy, ResponseOutcome, ResponseReply } from './responses-replies';
import { ResponseSettlement } from './response-settlement';
import { StoredResponses, isOpenStatus, storedResponseKeys } from './stored-responses';
import type { StoredResponseRecord } from './stored-responses';

/** An `mcp` tool's fields that hold credentials: sealed on the queue, never in the record. */
const CREDENTIAL_FIELDS = ['headers', 'authorization'] as const;

type Credentials = Record<number, Partial<Record<(typeof CREDENTIAL_FIELDS)[number], unknown>>>;

/** The request as its loop job keeps it: no input (the record holds it), and its MCP tools' credentials apart. */
function withoutCredentials(request: CreateResponseDto): { request: CreateResponseDto; credentials: Credentials } {
  const credentials: Credentials = {};
  const tools = (request.tools ?? []).map((tool, index) => {
    if (tool.type !== 'mcp') return tool;
    const kept = { ...tool };
    for (const field of CREDENTIAL_FIELDS) {
      if (!(field in tool)) continue;
      (credentials[index] ??= {})[field] = tool[field];
      delete kept[field];
    }
    return kept;
  });
  const kept: CreateResponseDto = { ...request, tools };
  delete kept.input;
  return { request: kept, credentials };
}

function withCredentials(request: CreateResponseDto, credentials: Credentials): CreateResponseDto {
  const tools = (request.tools ?? []).map((tool, index) => ({ ...tool, ...credentials[index] }));
  return { ...request, tools };
}

/** A background response with remote MCP tools as the request that creates it hands it over. */
export interface LoopStart {
  request: CreateResponseDto;
  record: StoredResponseRecord;
  tools: McpResponseTools;
  continuedKey?: string;
  tier?: string;
  streamed: boolean;
  clientGone: AbortSignal;
  reply: FastifyReply;
}

/**
 * `background: true` with remote MCP tools: a durable tool loop. The request records the response
 * and its first steps (the servers listed, the calls its input approves) and queues the loop on
 * the loops' queue (ResponseLoopQueue), which any API instance takes. The instance carrying it
 * logs every step before it takes it (LoopStepLogs) and queues each model turn as a job whose
 * worker logs its events; if that instance dies, another takes the loop on from the logs
 * (LoopReplay): a call begun and never answered is settled as interrupted, not made again, so
 * each call is made at most once. A cancel stops it wherever it is; a stream of it, on any
 * instance, replays the logs with the same sequence numbers.
 */
@Injectable()
export class BackgroundMcpLoops implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(BackgroundMcpLoops.name);
  private worker: RunningLoopWorker | undefined;
  /** Shutting down: loops carried here stop at their next step and are left for another instance. */
  private closing = false;
  private readonly loopsTaken: Counter<'start'>;
  private readonly interruptedCalls: Counter;

  constructor(
    private readonly env: ApiEnv,
    private readonly loops: ResponseLoopQueue,
    private readonly steps: LoopStepLogs,
    private readonly replay: LoopReplay,
    private readonly mcpLoop: McpToolLoop,
    private readonly completions: CompletionUseCase,
    private readonly stored: StoredResponses,
    private readonly settlement: ResponseSettlement,
    private readonly seal: CompactionSeal,
    private readonly cancelMessages: CancelMessages,
    private readonly queues: CompletionQueues,
    @Inject(COMMANDS_REDIS) private readonly redis: RedisClient,
    metrics: ApiMetrics,
  ) {
    this.loopsTaken = new Counter({
      name: 'llm_api_response_loops_total',
      help: "Background responses' remote MCP tool loops this instance took from the loops' queue: new, or carried_on (after the instance carrying it stopped).",
      labelNames: ['start'] as const,
      registers: [metrics.registry],
    });
    this.interruptedCalls = new Counter({
      name: 'llm_api_mcp_calls_interrupted_total',
      help: 'MCP calls found begun and unanswered when a loop was carried on (their instance stopped during them): not made again, settled as interrupted.',
      registers: [metrics.registry],
    });
  }

  onApplicationBootstrap(): void {
    this.worker = this.loops.startWorker((job) => this.carry(job));
    this.worker.worker.on('error', (error) => this.logger.warn(`tool loops: ${error.message}`));
  }

  /** At SIGTERM, before the runner drains: no loop takes another step here, and their jobs stall to another instance. */
  async beforeApplicationShutdown(): Promise<void> {
    this.closing = true;
    await this.worker?.close();
  }

  /** The request's side: the record and first steps written, the loop queued, then the queued response (or the loop's stream). */
  async start({ request, record, tools, continuedKey, tier, streamed, clientGone, reply }: LoopStart): Promise<void> {
    const { id } = record.identity;
    const kept: StoredResponseRecord = { ...record, loop: true };
    const { request: queuedRequest, credentials } = withoutCredentials(request);
    try {
      await this.stored.begin(kept);
      await tools.announce(new CollectedResponse(kept.identity).betweenTurns(), kept.history, this.steps.writer(id, '0'));
      const sealed = this.seal.seal(kept.owner, JSON.stringify(credentials));
      await this.loops.start({ id, owner: kept.owner, request: queuedRequest, credentials: sealed, continuedKey, tier });
    } catch {
      await this.stored.delete(kept).catch(() => undefined);
      throw redisUnavailable();
    }
    if (!streamed) return void (await reply.send(responseObject(kept.identity, kept.state)));
    await this.follow(kept, new StreamedResponse(new SseResponse(reply, undefined, { after: -1 }), kept.identity), clientGone);
  }

  /** A client's stream of the loop (the request's, or `GET /v1/responses/{id}?stream=true` on any instance), to its end. */
  async follow(record: StoredResponseRecord, streamed: StreamedResponse, signal: AbortSignal): Promise<void> {
    streamed.open();
    try {
      await this.replay.replay(record, streamed, signal, {
        follow: true,
        recordEnd: (outcome) => this.recordEnd(record, outcome),
        stillOpen: () => this.settlement.current(record),
      });
    } catch (error) {
      if (!signal.aborted) streamed.fail(error);
    }
  }

  /** The loop job: the response built again from its logs, then carried on from where they end. */
  private async carry(job: Job<LoopJobData>): Promise<void> {
    const { id, owner } = job.data;
    const record = await this.stored.find(owner, id);
    if (!record || !isOpenStatus(record.state.status)) return;
    const opened = this.seal.open(owner, job.data.credentials);
    const credentials: unknown = opened === undefined ? undefined : JSON.parse(opened);
    const request = withCredentials(job.data.request, isRecord(credentials) ? (credentials as Credentials) : {});
    const cancel = this.cancelMessages.follow(record.identity.model, id);
    const reply = new CollectedResponse(record.identity);
    const loop = new CarriedLoop(this.parts, record, job.data, request, reply, cancel.signal);
    try {
      this.loopsTaken.inc({ start: job.stalledCounter > 0 ? 'carried_on' : 'new' });
      const position = await this.replay.replay(record, reply, cancel.signal, { follow: false, recordEnd: (outcome) => this.recordEnd(record, outcome) });
      this.interruptedCalls.inc(position.interrupted.length);
      if (!position.ended) await loop.carryOn(position);
    } catch (error) {
      // Another instance carries it on (this one was taken for dead, or is shutting down).
      if (error instanceof LoopTakenOver || this.closing) return;
      await loop.fail(cancel.signal.aborted ? cancelledError() : error).catch(() => undefined);
    } finally {
      cancel.stop();
    }
  }

  /** Records the response's end unless it has one (a cancel came first). */
  private async recordEnd(record: StoredResponseRecord, { state, output }: ResponseOutcome): Promise<void> {
    await this.stored.endIfOpen(record, state, output).catch(() => undefined);
  }

  private get parts(): LoopParts {
    const { env, steps, mcpLoop, completions, seal, queues, redis } = this;
    return {
      env,
      steps,
      mcpLoop,
      completions,
      seal,
      queues,
      redis,
      recordEnd: (record, outcome) => this.recordEnd(record, outcome),
      closing: () => this.closing,
    };
  }
}

/** What a carried loop uses of the service. */
interface LoopParts {
  env: ApiEnv;
  steps: LoopStepLogs;
  mcpLoop: McpToolLoop;
  completions: CompletionUseCase;
  seal: CompactionSeal;
  queues: CompletionQueues;
  redis: RedisClient;
  recordEnd: (record: StoredResponseRecord, outcome: ResponseOutcome) => Promise<void>;
  closing: () => boolean;
}

/** One loop on the instance that carries it: its turns run and its calls made, each step logged first. */
class CarriedLoop {
  private writer: LoopStepWriter | undefined;
  private currentTurn: string | undefined;

  constructor(
    private readonly parts: LoopParts,
    private readonly record: StoredResponseRecord,
    private readonly data: LoopJobData,
    private readonly request: CreateResponseDto,
    private readonly reply: ResponseReply,
    private readonly signal: AbortSignal,
  ) {
    // A cancel stops the running turn as a chat completion's client leaving does.
    signal.addEventListener('abort', () => this.cancelTurn(), { once: true });
  }

  async carryOn(position: LoopPosition): Promise<void> {
    const { mcpLoop } = this.parts;
    const writer = (this.writer = this.parts.steps.writer(this.record.identity.id, position.tail, this.parts.closing));
    const tools = mcpLoop.reopen(this.request, position.listed, writer, position.calls, this.signal);
    let { turnEnding, turns, usage, interrupted } = position;
    /** Calls were settled since the last turn (or before the first): the next turn answers them. */
    let callsSinceTurn = position.settledSinceTurn > 0;
    if (position.abandoned) return this.end({ finishReason: 'stop', usage: usage ?? NO_USAGE }, 'max_tool_calls');
    for (;;) {
      const total = { finishReason: 'stop' as const, ...turnEnding, usage: usage ?? NO_USAGE };
      if (turnEnding?.finishReason === 'length') return this.end(total);
      const output = this.reply.betweenTurns();
      const next: TurnOutcome = turnEnding ? await tools.afterTurn(output) : await tools.carryOn(output, interrupted);
      if (next === 'bounded') return this.end(total, 'max_tool_calls');
      if (next === 'ended' && turnEnding) return this.end(total);
      callsSinceTurn ||= next === 'again' || interrupted.length > 0;
      interrupted = [];
      const left = this.request.max_output_tokens == null ? undefined : this.request.max_output_tokens - total.usage.completion_tokens;
      if (left !== undefined && left <= 0) return this.end({ ...total, finishReason: 'length' });
      // The request's own turn (its forced tool first) unless calls came before it.
      const own = turns === 0 && !callsSinceTurn;
      const asked = own ? this.request : { ...this.request, tool_choice: 'auto', max_output_tokens: left };
      const job = this.turnJob(asked as CreateResponseDto, output.snapshot(), tools);
      // Cancelled during a call: no turn is logged that would never be queued.
      if (this.signal.aborted) throw cancelledError();
      await writer.append({ s: 'turn', job: job.id });
      turnEnding = await this.runTurn(job);
      usage = addedUsage(usage, turnEnding.usage);
      turns++;
      callsSinceTurn = false;
    }
  }

  /** Ends the response with its failure (logged for its streams, recorded). */
  async fail(error: unknown): Promise<void> {
    const { status, type, message, code } = toOpenAiError(error);
    const step: LoopStep = { s: 'fail', error: { status, type, message, code } };
    await this.writer?.append(step).catch(() => undefined);
    await applyEnd(this.reply, step, (outcome) => this.parts.recordEnd(this.record, outcome));
  }

  private async end(ending: CompletionEnding, cutShortBy?: CutShortBy): Promise<void> {
    const step: LoopStep = { s: 'end', ending, ...(cutShortBy ? { cutShortBy } : {}) };
    await this.writer?.append(step);
    await applyEnd(this.reply, step, (outcome) => this.parts.recordEnd(this.record, outcome));
  }

  /** The job of a turn that answers the conversation so far (its id says how long the output was). */
  private turnJob(asked: CreateResponseDto, output: ConversationItem[], tools: McpResponseTools): GenerateJobInput {
    const { env, seal, completions } = this.parts;
    const { owner, history, inputStart, identity } = this.record;
    const { job } = toResponseJob(
      asked,
      [...history, ...output],
      inputStart,
      `${identity.id}_${output.length}`,
      identity.createdAtMs,
      env.MAX_QUEUE_WAIT_MS,
      this.data.continuedKey,
      seal.opener(owner),
      tools.offers,
    );
    return completions.withGrantedTier(job, this.data.tier, owner);
  }

  /** One model turn through the queue (admitted as every turn is: rate limits and fair share count it), its events logged by its worker. */
  private async runTurn(job: GenerateJobInput): Promise<CompletionEnding> {
    const { env, completions } = this.parts;
    this.currentTurn = job.id;
    let ending: CompletionEnding | undefined;
    const log = { key: storedResponseKeys(job.id).log, keepMs: env.RESUME_WINDOW_SECONDS * 1000, maxEvents: env.RESUME_MAX_EVENTS };
    await completions.complete(
      { job, owner: this.record.owner, clientGone: this.signal, streamed: false },
      {
        response: this.reply,
        keep: () => Promise.resolve({ reply: { stopWhenUnheard: false, log } }),
        finish: (ended) => {
          ending = ended;
          return Promise.resolve();
        },
        fail: (error) => {
          throw error;
        },
      },
    );
    this.currentTurn = undefined;
    if (!ending) throw new Error(`turn ${job.id} ended without an ending`);
    return ending;
  }

  private cancelTurn(): void {
    const turn = this.currentTurn;
    if (!turn) return;
    const { model } = this.record.identity;
    const { queues, redis } = this.parts;
    void queues
      .forModel(model)
      .remove(turn)
      .catch(() => 0);
    void redis.spublish(cancellationsChannel(model), turn).catch(() => 0);
  }
}
