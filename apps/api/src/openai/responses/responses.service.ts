import { Injectable } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import type { CompletionUsage, GenerateJobInput } from '@app/contracts';
import type { FastifyReply } from 'fastify';
import { keeplessDoor } from '../common/buffered-reply';
import { SseResponse } from '../common/sse-response';
import { CompletionUseCase } from '../../pipeline/completion-use-case';
import { OpenAiError } from '../../errors/openai-error';
import type { CreateResponseDto } from './responses-request.dto';
import { BackgroundResponses } from './background-responses';
import { CompactionSeal } from './compaction-seal';
import { newResponseId } from './response-ids';
import { compactionTriggered, inputItems } from './response-items';
import type { ConversationItem } from './response-items';
import { conversationOf, requestedTier, toResponseJob } from './responses-job.mapper';
import { ConversationLocks } from './conversation-locks';
import { ConversationsService } from './conversations.service';
import type { ResponseIdentity } from './response-object';
import { addedUsage, BufferedResponse, InputTokensReply, NO_USAGE, StreamedResponse } from './responses-replies';
import { McpToolLoop } from './mcp-tool-loop';
import { BackgroundMcpLoops } from './background-mcp-loops';
import type { TurnOutcome } from './mcp-tool-loop';
import { ResponseSettlement } from './response-settlement';
import { ResponseRun } from './response-run';
import { inputTokensJob, ServerCompaction } from './server-compaction';
import { StoredResponses } from './stored-responses';
import type { StoredResponseRecord } from './stored-responses';
import type { SocketTurn } from './socket-turn';

/** One `POST /v1/responses` as the service needs it, once HTTP has been read. */
export interface CreateResponseCall {
  request: CreateResponseDto;
  owner: string;
  acceptedAt: number;
  /** Aborts when the client leaves (taken before any await). */
  clientGone: AbortSignal;
  /** The HTTP exchange (in WebSocket mode, the upgrade's): the request log follows it. */
  reply: FastifyReply;
  /** WebSocket mode: the events go to the connection, which keeps the response it ends. */
  socket?: SocketTurn;
}

/**
 * The Responses door's use case: the conversation a request continues (`previous_response_id`,
 * `item_reference`) mapped to the job the chat door queues (response-job.mapper.ts), and its
 * part of the shared flow (CompletionUseCase): a stored response is recorded first and its end
 * recorded before the client hears it; a background one is handed to BackgroundResponses (or,
 * with remote MCP tools, BackgroundMcpLoops).
 */
@Injectable()
export class ResponsesService {
  constructor(
    private readonly completions: CompletionUseCase,
    private readonly env: ApiEnv,
    private readonly stored: StoredResponses,
    private readonly settlement: ResponseSettlement,
    private readonly background: BackgroundResponses,
    private readonly seal: CompactionSeal,
    private readonly conversations: ConversationsService,
    private readonly conversationLocks: ConversationLocks,
    private readonly mcpLoop: McpToolLoop,
    private readonly mcpLoops: BackgroundMcpLoops,
    private readonly compaction: ServerCompaction,
  ) {}

  /**
   * `POST /v1/responses/input_tokens`: the request mapped as creating it would be (the
   * conversation it continues included), then counted by a worker of its model, where the chat
   * template renders the messages and tools the answer would be given.
   */
  async countInputTokens({ request, owner, acceptedAt, clientGone, reply }: CreateResponseCall): Promise<void> {
    const { job: mapped } = await this.mapped(request, owner, newResponseId(acceptedAt), acceptedAt, clientGone);
    const job = inputTokensJob(mapped, mapped.id);
    const response = new InputTokensReply(reply);
    await this.completions.complete(
      { job: this.completions.withGrantedTier(job, undefined, owner), owner, clientGone, exchange: reply, streamed: false },
      keeplessDoor(response),
    );
  }

  /**
   * What a request continues (its `conversation`'s items, else `previous_response_id`'s history
   * then output), then its own input.
   */
  async history(owner: string, previousId: string | undefined, input: CreateResponseDto['input'], conversation?: string, socket?: SocketTurn) {
    const previous = await this.previous(owner, previousId, socket);
    const earlier = conversation
      ? await this.conversations.history(owner, conversation)
      : previous
        ? [...previous.history, ...(previous.state.output as ConversationItem[])]
        : [];
    const asked = compactionTriggered(input ?? undefined);
    const own = await inputItems(asked.input, (itemId) => this.stored.findItem(owner, itemId));
    return { previous, earlier, history: [...earlier, ...own], compactionTriggered: asked.triggered };
  }

  /**
   * The request's job, after the conversation it continues, and the history it answers; with
   * remote MCP tools, their servers listed (McpToolLoop) and `turn` the job of the loop's next turn.
   * `compacting`: a prompt past the request's `context_management` threshold is compacted first
   * (ServerCompaction), and the compaction item leads the output (`settings.leading`); an input
   * that ends with a `compaction_trigger` is compacted whatever its length, and the compaction is
   * the whole response (`settings.leadingOnly`, `compactedOnly` its cost): no model answers.
   */
  async mapped(request: CreateResponseDto, owner: string, id: string, acceptedAt: number, signal: AbortSignal, socket?: SocketTurn, compacting = false) {
    const {
      previous,
      earlier,
      history,
      compactionTriggered: triggered,
    } = await this.history(owner, request.previous_response_id ?? undefined, request.input, conversationOf(request), socket);
    const mcp = await this.mcpLoop.prepare(request, signal);
    const { MAX_QUEUE_WAIT_MS } = this.env;
    const continuedKey = previous?.affinityKey;
    const opener = this.seal.opener(owner);
    const jobOf = (asked: CreateResponseDto, items: ConversationItem[], jobId: string) =>
      toResponseJob(asked, items, earlier.length, jobId, acceptedAt, MAX_QUEUE_WAIT_MS, continuedKey, opener, mcp?.offers);
    // A tool the request forces is the first turn's: the turns after its calls may answer, in the output tokens left.
    const turn = (output: ConversationItem[], at: number, maxOutputTokens: number | undefined) =>
      jobOf({ ...request, tool_choice: 'auto', max_output_tokens: maxOutputTokens }, [...history, ...output], `${id}_${at}`).job;
    const first = jobOf(request, history, id);
    const call = { owner, history, earlierLength: earlier.length, continuedKey, acceptedAt, clientGone: signal };
    if (compacting && triggered) {
      const compactedOnly = await this.compaction.now(request, first.job, call);
      return {
        previous,
        earlier,
        history,
        mcp,
        turn,
        job: first.job,
        settings: { ...first.settings, leading: [compactedOnly.item], leadingOnly: true },
        compactedOnly,
      };
    }
    const compaction = compacting ? await this.compaction.ifOver(request, first.job, call) : undefined;
    if (!compaction) return { previous, earlier, history, mcp, turn, ...first };
    // The item stands for the history before it (compaction-content.ts): the model reads what it holds, then answers.
    const compacted = jobOf(request, [...history, compaction.item], id);
    return { previous, earlier, history, mcp, turn, job: compacted.job, settings: { ...compacted.settings, leading: [compaction.item] } };
  }

  /**
   * A response on a conversation holds the conversation's lock from before it reads its items
   * until its turn is appended (ConversationLocks): two never interleave their turns.
   */
  async create(call: CreateResponseCall): Promise<void> {
    const id = newResponseId(call.acceptedAt);
    const conversation = conversationOf(call.request);
    if (conversation === undefined) return this.respond(call, id);
    // Another key's conversation is a 404 before any lock is taken on it.
    await this.conversations.find(call.owner, conversation, 'conversation');
    const release = await this.conversationLocks.take(conversation, id);
    try {
      await this.respond(call, id);
    } finally {
      release();
    }
  }

  private async respond({ request, owner, acceptedAt, clientGone, reply, socket }: CreateResponseCall, id: string): Promise<void> {
    const {
      previous,
      earlier,
      history,
      job: mapped,
      settings,
      mcp,
      turn,
      compactedOnly,
    } = await this.mapped(request, owner, id, acceptedAt, clientGone, socket, true);
    const job = this.completions.withGrantedTier(mapped, requestedTier(request.service_tier ?? undefined), owner);
    const identity: ResponseIdentity = { id, model: job.model, createdAtMs: acceptedAt, serviceTier: job.schedule.tier ?? 'default', settings };
    const streamed = request.stream === true || socket !== undefined;
    const events = socket?.events ?? new SseResponse(reply, undefined);
    const response = streamed ? new StreamedResponse(events, identity) : new BufferedResponse(reply, identity);
    const { affinityKey } = job.schedule;
    const record: StoredResponseRecord = {
      owner,
      identity,
      history,
      inputStart: earlier.length,
      state: { status: settings.background ? 'queued' : 'in_progress', output: [] },
      ...(affinityKey ? { affinityKey } : {}),
    };
    const run = new ResponseRun(response, record, this.stored, socket);
    if (compactedOnly) {
      // A final compaction_trigger: the summary was the model's only turn, and the compaction item is the output.
      if (settings.store) await run.keepFirst();
      return run.finish({ finishReason: 'stop', usage: compactedOnly.usage });
    }
    if (mcp && settings.background) {
      const continuedKey = previous?.affinityKey;
      return this.mcpLoops.start({ request, record, tools: mcp, continuedKey, tier: job.schedule.tier, streamed, clientGone, reply });
    }
    const nextTurn = (output: ConversationItem[], maxOutputTokens = request.max_output_tokens ?? undefined) =>
      this.completions.withGrantedTier(turn(output, output.length, maxOutputTokens), job.schedule.tier, owner);
    /** One model turn, to the response's end or (a tool loop's) to the next turn. */
    const runTurn = (turnJob: GenerateJobInput, first: boolean, usage?: CompletionUsage): Promise<void> =>
      this.completions
        .complete(
          { job: turnJob, owner, clientGone, exchange: reply, streamed },
          {
            response,
            keep: first && settings.store ? run.keep : undefined,
            handOff: (kept, admission) => {
              if (!first || !kept || !settings.background) return undefined;
              return streamed ? this.background.stream(job, admission, kept.record, reply) : this.background.start(job, admission, kept.record, reply);
            },
            // A response its request follows to the end: a client that leaves (or an instance that dies) stops its job.
            finish: async (ending) => {
              const total = { ...ending, usage: addedUsage(usage, ending.usage) };
              if (!mcp || ending.finishReason === 'length') return run.finish(total);
              const output = response.betweenTurns();
              let next: TurnOutcome;
              try {
                next = await mcp.afterTurn(output);
              } catch (error) {
                return run.fail(error);
              }
              if (next !== 'again') return run.finish(total, next === 'bounded' ? 'max_tool_calls' : undefined);
              const left = request.max_output_tokens == null ? undefined : request.max_output_tokens - total.usage.completion_tokens;
              if (left !== undefined && left <= 0) return run.finish({ ...total, finishReason: 'length' });
              return runTurn(nextTurn(output.snapshot(), left), false, total.usage);
            },
            fail: (error) => run.fail(error),
          },
        )
        // A later turn refused before it ran (admission: a rate limit, a full queue) ends the response.
        .catch((error: unknown) => run.failUnlessEnded(error));
    if (!mcp) return runTurn(job, true);
    // A tool loop's servers are listed (and approved calls made) before its first job is admitted.
    if (settings.store) await run.keepFirst();
    const output = response.betweenTurns();
    let opened: TurnOutcome;
    try {
      opened = await mcp.open(output, history);
    } catch (error) {
      return run.fail(error);
    }
    if (opened === 'bounded') return run.finish({ finishReason: 'stop', usage: NO_USAGE }, 'max_tool_calls');
    return runTurn(opened === 'again' ? nextTurn(output.snapshot()) : job, false);
  }

  /** The response a `previous_response_id` continues (its history, then its output, come before the input). */
  private async previous(owner: string, previousId: string | undefined, socket?: SocketTurn): Promise<StoredResponseRecord | undefined> {
    if (previousId === undefined) return undefined;
    // A WebSocket's last response first: it may be unstored, and it has ended.
    const recalled = socket?.recall(previousId);
    const found = recalled ?? (await this.stored.find(owner, previousId));
    const previous = recalled ?? (found && (await this.settlement.current(found)));
    // A 400, as OpenAI answers it: clients branch on the code (Open Responses, the Agents SDK).
    if (!previous)
      throw OpenAiError.invalidRequest(`Previous response with id '${previousId}' not found.`, 'previous_response_id', 'previous_response_not_found');
    if (previous.state.status === 'queued' || previous.state.status === 'in_progress') {
      throw OpenAiError.invalidRequest(`Previous response with id '${previousId}' is still in progress.`, 'previous_response_id', 'invalid_value');
    }
    return previous;
  }
}
