import { Injectable } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { isRecord } from '@app/contracts';
import { McpGateway } from '../../mcp/mcp-gateway';
import { McpListError } from '../../mcp/mcp-types';
import type { McpCallResult, McpToolInfo } from '../../mcp/mcp-types';
import { OpenAiError } from '../../errors/openai-error';
import type { CreateResponseDto } from './responses-request.dto';
import type { ConversationItem } from './response-items';
import type { McpItem } from './mcp-items';
import { mcpServerTools } from './mcp-tools';
import type { McpOffer, McpServerTool } from './mcp-tools';
import type { PendingMcpCall, ResponseOutput } from './responses-formatter';
import { UNLOGGED_STEPS } from './mcp-loop-steps';
import type { LoopSteps, OutputStep } from './mcp-loop-steps';

/** After a model turn: the response ends (answered, or waiting on the client), goes on to another turn, or has reached its bound on calls. */
export type TurnOutcome = 'ended' | 'again' | 'bounded';

/** A server as the request offers it, with what it listed (or why it could not). */
interface ListedServer {
  tool: McpServerTool;
  offer: McpOffer;
  error: string | null;
}

/** What a call whose instance died during it gives: it is not made again, so it ran once or not at all. */
const INTERRUPTED_CALL: McpCallResult = {
  error: {
    type: 'http_error',
    code: 503,
    message:
      'The service instance making this call stopped before its result came. The call was not made again (each call is made at most once), so it may or may not have run on the server.',
  },
};

/**
 * One response's remote MCP servers: what they listed, offered to the model (the mapper's
 * `mcpOffers`), and the calls the model makes of them, made here between its turns, each at most
 * once, up to the response's bound. Every change to the output goes through `steps`, which a
 * background response's loop logs first (LoopStepWriter), so another instance can carry it on.
 */
export class McpResponseTools {
  constructor(
    private readonly gateway: McpGateway,
    private readonly servers: ListedServer[],
    private readonly maxCalls: number,
    private readonly signal: AbortSignal,
    private readonly steps: LoopSteps = UNLOGGED_STEPS,
    /** Calls made (or begun) before this instance took the loop on. */
    private calls = 0,
  ) {}

  /** What the model is offered: each server's allowed tools as listed. */
  get offers(): McpOffer[] {
    return this.servers.map((server) => server.offer);
  }

  /**
   * Before the first turn: an `mcp_list_tools` item for each server the conversation has not
   * listed yet (OpenAI lists once per conversation), then the calls the input approves
   * (`mcp_approval_response`), opened but not made; into `steps` (a background loop's log, as it starts).
   */
  async announce(output: ResponseOutput, history: ConversationItem[], steps = this.steps): Promise<void> {
    const listedBefore = new Set(history.flatMap((item) => (item.type === 'mcp_list_tools' ? [item.server_label] : [])));
    for (const { tool, offer, error } of this.servers) {
      const step: OutputStep = { s: 'list', label: tool.label, tools: offer.tools, error };
      await steps.take(output, listedBefore.has(tool.label) ? { ...step, unshown: true } : step);
    }
    for (const asked of approvedCalls(history))
      await steps.take(output, { s: 'approved', id: asked.id, server: asked.server_label, name: asked.name, arguments: asked.arguments });
  }

  /** Announces the servers and approved calls, and makes those calls. */
  async open(output: ResponseOutput, history: ConversationItem[]): Promise<TurnOutcome> {
    await this.announce(output, history);
    return this.make(output, output.pendingMcpCalls());
  }

  /** After a turn: its calls made, unless the output waits on the client (an approval, a function call) or the bound is reached. */
  async afterTurn(output: ResponseOutput): Promise<TurnOutcome> {
    if (output.waitsOnClient()) return 'ended';
    return this.make(output, output.pendingMcpCalls());
  }

  /**
   * Where another instance left the loop between turns: the calls it had begun are settled as
   * interrupted (never made twice), and the calls still waiting are made.
   */
  async carryOn(output: ResponseOutput, interrupted: string[]): Promise<TurnOutcome> {
    for (const id of interrupted) await this.steps.take(output, { s: 'called', id, result: INTERRUPTED_CALL });
    return this.make(output, output.pendingMcpCalls());
  }

  private async make(output: ResponseOutput, pending: PendingMcpCall[]): Promise<TurnOutcome> {
    if (pending.length === 0) return 'ended';
    if (this.calls + pending.length > this.maxCalls) {
      await this.steps.take(output, { s: 'abandon' });
      return 'bounded';
    }
    for (const call of pending) {
      this.calls++;
      await this.steps.take(output, { s: 'calling', id: call.id });
      await this.steps.take(output, { s: 'called', id: call.id, result: await this.call(call) });
    }
    return 'again';
  }

  private async call(call: PendingMcpCall): Promise<McpCallResult> {
    const server = this.servers.find((listed) => listed.tool.label === call.server)?.tool.server;
    if (!server) return { error: { type: 'mcp_protocol_error', code: -32601, message: `No MCP server labelled '${call.server}' is offered.` } };
    let args: unknown;
    try {
      args = JSON.parse(call.arguments || '{}');
    } catch {
      return { error: { type: 'mcp_protocol_error', code: -32602, message: 'The arguments are not JSON.' } };
    }
    if (!isRecord(args)) return { error: { type: 'mcp_protocol_error', code: -32602, message: 'The arguments are not a JSON object.' } };
    return this.gateway.callTool(server, call.name, args, this.signal);
  }
}

const offerOf = (tool: McpServerTool, tools: McpToolInfo[]): McpOffer => ({
  index: tool.index,
  label: tool.label,
  tools,
  needsApproval: tool.needsApproval,
  echo: tool.echo,
});

/** The approval requests the history approves and no call has answered yet. */
function approvedCalls(history: ConversationItem[]): Array<McpItem & { type: 'mcp_approval_request' }> {
  const asked = new Map<string, McpItem & { type: 'mcp_approval_request' }>();
  const made = new Set<string>();
  const approved: string[] = [];
  for (const item of history) {
    if (item.type === 'mcp_approval_request') asked.set(item.id, item);
    if (item.type === 'mcp_call' && item.approval_request_id) made.add(item.approval_request_id);
    if (item.type === 'mcp_approval_response' && item.approve) approved.push(item.approval_request_id);
  }
  return [...new Set(approved)].flatMap((id) => {
    const request = asked.get(id);
    return request && !made.has(id) ? [request] : [];
  });
}

/** What a server listed, as a loop's step log recorded it. */
export type LoggedList = Pick<ListedServer, 'error'> & { tools: McpToolInfo[] };

/**
 * The Responses door's remote MCP tools (the `mcp` tool): each server resolved through the gateway
 * (the operator's allowlist and registered servers; a 400 naming the tool otherwise) and listed
 * before the model's first turn. The loop runs on the instance that follows the response, or for
 * a background response on the loops' queue (BackgroundMcpLoops), which may move it to another.
 */
@Injectable()
export class McpToolLoop {
  constructor(
    private readonly gateway: McpGateway,
    private readonly env: ApiEnv,
  ) {}

  /** The request's MCP servers, listed; undefined when it has none. */
  async prepare(request: CreateResponseDto, signal: AbortSignal): Promise<McpResponseTools | undefined> {
    const tools = mcpServerTools(request.tools ?? [], (tool, param) => this.gateway.resolve(tool, param));
    if (tools.length === 0) return undefined;
    const { MCP_MAX_SERVERS_PER_REQUEST } = this.env;
    if (tools.length > MCP_MAX_SERVERS_PER_REQUEST)
      throw OpenAiError.invalidRequest(`At most ${MCP_MAX_SERVERS_PER_REQUEST} MCP servers may be given in one request.`, 'tools', 'invalid_value');
    const servers = await Promise.all(tools.map((tool) => this.list(tool, signal)));
    return new McpResponseTools(this.gateway, servers, this.maxCalls(request), signal);
  }

  /**
   * A background loop taken on from its step log: its servers resolved again (with the request's
   * credentials), offering what they listed then; `calls` made or begun so far count towards its bound.
   */
  reopen(request: CreateResponseDto, listed: Map<string, LoggedList>, steps: LoopSteps, calls: number, signal: AbortSignal): McpResponseTools {
    const servers = mcpServerTools(request.tools ?? [], (tool, param) => this.gateway.resolve(tool, param)).map((tool): ListedServer => {
      const logged = listed.get(tool.label);
      return { tool, offer: offerOf(tool, (logged?.tools ?? []).filter(tool.allowed)), error: logged?.error ?? null };
    });
    return new McpResponseTools(this.gateway, servers, this.maxCalls(request), signal, steps, calls);
  }

  private maxCalls(request: CreateResponseDto): number {
    return Math.min(request.max_tool_calls ?? Infinity, this.env.MCP_MAX_CALLS_PER_RESPONSE);
  }

  private async list(tool: McpServerTool, signal: AbortSignal): Promise<ListedServer> {
    try {
      const listed = await this.gateway.listTools(tool.server, signal);
      return { tool, offer: offerOf(tool, listed.filter(tool.allowed)), error: null };
    } catch (error) {
      if (!(error instanceof McpListError)) throw error;
      return { tool, offer: offerOf(tool, []), error: error.message };
    }
  }
}
