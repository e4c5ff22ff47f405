import { Injectable } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { isRecord } from '@app/contracts';
import { McpGateway } from '../../mcp/mcp-gateway';
import { McpListError } from '../../mcp/mcp-types';
import type { McpCallResult } from '../../mcp/mcp-types';
import { OpenAiError } from '../../errors/openai-error';
import type { CreateResponseDto } from './responses-request.dto';
import type { ConversationItem } from './response-items';
import type { McpItem } from './mcp-items';
import { mcpServerTools } from './mcp-tools';
import type { McpOffer, McpServerTool } from './mcp-tools';
import type { PendingMcpCall, ResponseOutput } from './responses-formatter';

/** After a model turn: the response ends (answered, or waiting on the client), goes on to another turn, or has reached its bound on calls. */
export type TurnOutcome = 'ended' | 'again' | 'bounded';

/** A server as the request offers it, with what it listed (or why it could not). */
interface ListedServer {
  tool: McpServerTool;
  offer: McpOffer;
  error: string | null;
}

/**
 * One response's remote MCP servers: what they listed, offered to the model (the mapper's
 * `mcpOffers`), and the calls the model makes of them, made here between its turns, each at most
 * once, up to the response's bound.
 */
export class McpResponseTools {
  private calls = 0;

  constructor(
    private readonly gateway: McpGateway,
    private readonly servers: ListedServer[],
    private readonly maxCalls: number,
    private readonly signal: AbortSignal,
  ) {}

  /** What the model is offered: each server's allowed tools as listed. */
  get offers(): McpOffer[] {
    return this.servers.map((server) => server.offer);
  }

  /**
   * Before the first turn: an `mcp_list_tools` item for each server the conversation has not
   * listed yet (OpenAI lists once per conversation), then the calls the input approves
   * (`mcp_approval_response`), made.
   */
  async open(output: ResponseOutput, history: ConversationItem[]): Promise<TurnOutcome> {
    const listedBefore = new Set(history.flatMap((item) => (item.type === 'mcp_list_tools' ? [item.server_label] : [])));
    for (const { tool, offer, error } of this.servers) if (!listedBefore.has(tool.label)) output.addListTools(tool.label, offer.tools, error);
    const approved = approvedCalls(history).map((asked) => output.addApprovedCall(asked.id, asked.server_label, asked.name, asked.arguments));
    return this.make(output, approved);
  }

  /** After a turn: its calls made, unless the output waits on the client (an approval, a function call) or the bound is reached. */
  async afterTurn(output: ResponseOutput): Promise<TurnOutcome> {
    if (output.waitsOnClient()) return 'ended';
    return this.make(output, output.pendingMcpCalls());
  }

  private async make(output: ResponseOutput, pending: PendingMcpCall[]): Promise<TurnOutcome> {
    if (pending.length === 0) return 'ended';
    if (this.calls + pending.length > this.maxCalls) {
      output.abandonMcpCalls();
      return 'bounded';
    }
    for (const call of pending) {
      this.calls++;
      output.settleMcpCall(call.id, await this.call(call));
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

/**
 * The Responses door's remote MCP tools (the `mcp` tool): each server resolved through the gateway
 * (the operator's allowlist and registered servers; a 400 naming the tool otherwise) and listed
 * before the model's first turn. The loop runs on the instance that follows the response, so a
 * background response with MCP tools is refused until its loop can be carried by another instance.
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
    if (request.background === true)
      throw OpenAiError.invalidRequest(
        `Background responses with remote MCP tools ('mcp') are not available here yet; send the request without 'background'.`,
        'background',
        'unsupported_value',
      );
    const { MCP_MAX_SERVERS_PER_REQUEST, MCP_MAX_CALLS_PER_RESPONSE } = this.env;
    if (tools.length > MCP_MAX_SERVERS_PER_REQUEST)
      throw OpenAiError.invalidRequest(`At most ${MCP_MAX_SERVERS_PER_REQUEST} MCP servers may be given in one request.`, 'tools', 'invalid_value');
    const servers = await Promise.all(tools.map((tool) => this.list(tool, signal)));
    const maxCalls = Math.min(request.max_tool_calls ?? Infinity, MCP_MAX_CALLS_PER_RESPONSE);
    return new McpResponseTools(this.gateway, servers, maxCalls, signal);
  }

  private async list(tool: McpServerTool, signal: AbortSignal): Promise<ListedServer> {
    const offer = (tools: McpOffer['tools']): McpOffer => ({ index: tool.index, label: tool.label, tools, needsApproval: tool.needsApproval, echo: tool.echo });
    try {
      const listed = await this.gateway.listTools(tool.server, signal);
      return { tool, offer: offer(listed.filter(tool.allowed)), error: null };
    } catch (error) {
      if (!(error instanceof McpListError)) throw error;
      return { tool, offer: offer([]), error: error.message };
    }
  }
}
