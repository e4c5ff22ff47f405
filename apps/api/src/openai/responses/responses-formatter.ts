import { isGenerationPart, newToolCallId } from '@app/contracts';
import type { OutputPart, TokenLogprob } from '@app/contracts';
import { outputItemId } from './response-ids';
import type { ConversationItem } from './response-items';
import type { ResponseSettings } from './responses-job.mapper';
import { CustomInputReader, customCallInput } from './custom-tools';
import type { McpCallError, McpCallResult, McpToolInfo } from '../../mcp/mcp-types';

/** One server-sent event of a Responses stream: its type (the `event:` line) and its JSON (the `data:` line). */
export interface ResponseEventFrame {
  event: string;
  data: string;
}

type ItemStatus = 'in_progress' | 'completed' | 'incomplete';

interface MessageState {
  type: 'message';
  id: string;
  text: string;
  logprobs: TokenLogprob[];
  status: ItemStatus;
}

interface FunctionCallState {
  type: 'function_call';
  id: string;
  callId: string;
  name: string;
  /** A namespace member's namespace (its `name` is the member's own then). */
  namespace?: string;
  arguments: string;
  /** The engine's index of the call, to tell a new call from more of the last. */
  index: number;
  status: ItemStatus;
  /** A custom tool's call: its input read out of the arguments as they stream. */
  custom?: { reader: CustomInputReader; input: string };
  /** A remote MCP server's tool: an `mcp_call` the service makes, or an `mcp_approval_request` when it waits for the client's approval. */
  mcp?: McpCallState;
}

interface McpCallState {
  server: string;
  approval: boolean;
  /** Made, or given up: its `output_item.done` has gone out. */
  settled: boolean;
  output: string | null;
  error: McpCallError | null;
  /** The approval it was made on, for a call the client approved. */
  approvalRequestId: string | null;
}

/** A server's tools, listed for the response (`mcp_list_tools`). */
interface ListToolsState {
  type: 'mcp_list_tools';
  id: string;
  server: string;
  tools: McpToolInfo[];
  error: string | null;
}

/** An MCP call waiting to be made: its item's id, and what to call. */
export interface PendingMcpCall {
  id: string;
  server: string;
  name: string;
  arguments: string;
}

/** A reasoning model's thought: one `reasoning_text` part, and (when asked) a summary of one part. */
interface ReasoningState {
  type: 'reasoning';
  id: string;
  text: string;
  status: ItemStatus;
}

/** A compaction made before the model ran (server-side compaction): it leads the output as it was sealed. */
type CompactionState = ConversationItem & { type: 'compaction' };

type ItemState = MessageState | FunctionCallState | ReasoningState | ListToolsState | CompactionState;

const messageItem = (item: MessageState): ConversationItem & { type: 'message' } => ({
  type: 'message',
  id: item.id,
  role: 'assistant',
  status: item.status,
  content: item.status === 'in_progress' && item.text === '' ? [] : [{ type: 'output_text', text: item.text, annotations: [], logprobs: item.logprobs }],
});

/** A custom tool's call: the input it was given, whole once its arguments are (a call cut short keeps what was read). */
const customToolCallItem = (item: FunctionCallState, custom: NonNullable<FunctionCallState['custom']>): ConversationItem => ({
  type: 'custom_tool_call',
  id: item.id,
  call_id: item.callId,
  name: item.name,
  input: item.status === 'in_progress' ? custom.input : (customCallInput(item.arguments) ?? custom.input),
  status: item.status,
  ...(item.namespace === undefined ? {} : { namespace: item.namespace }),
});

const functionCallItem = (item: FunctionCallState): ConversationItem =>
  item.mcp ? mcpCallItem(item, item.mcp) : item.custom ? customToolCallItem(item, item.custom) : plainCallItem(item);

/** A call of an MCP server's tool: made by the service (`mcp_call`), or waiting for approval (`mcp_approval_request`). */
function mcpCallItem(item: FunctionCallState, mcp: McpCallState): ConversationItem {
  const asked = { id: item.id, server_label: mcp.server, name: item.name, arguments: item.arguments };
  if (mcp.approval) return { type: 'mcp_approval_request', ...asked };
  const status = !mcp.settled ? 'in_progress' : item.status === 'incomplete' ? 'incomplete' : mcp.error ? 'failed' : 'completed';
  return { type: 'mcp_call', ...asked, output: mcp.output, error: mcp.error, status, approval_request_id: mcp.approvalRequestId };
}

const listToolsItem = (item: ListToolsState): ConversationItem => ({
  type: 'mcp_list_tools',
  id: item.id,
  server_label: item.server,
  tools: item.tools,
  error: item.error,
});

const plainCallItem = (item: FunctionCallState): ConversationItem => ({
  type: 'function_call',
  id: item.id,
  call_id: item.callId,
  name: item.name,
  arguments: item.arguments,
  status: item.status,
  ...(item.namespace === undefined ? {} : { namespace: item.namespace }),
});

/**
 * The thought verbatim as its `reasoning_text` content (as OpenAI gives an open-weight model's
 * chain of thought) and, when the request asked for `reasoning.summary`, as the one summary part:
 * no model here writes summaries, and the thought is its own most faithful one.
 */
const reasoningItem = (item: ReasoningState, withSummary: boolean): ConversationItem => {
  const started = !(item.status === 'in_progress' && item.text === '');
  return {
    type: 'reasoning',
    id: item.id,
    summary: withSummary && started ? [{ type: 'summary_text', text: item.text }] : [],
    content: started ? [{ type: 'reasoning_text', text: item.text }] : [],
    status: item.status,
  };
};

/** What the request asked of the output beyond its items: per-token log probabilities, a summary of the thought. */
export type OutputSettings = Pick<ResponseSettings, 'logprobs' | 'reasoning' | 'calledAs' | 'leading' | 'leadingOnly'>;

/** `reasoning.summary` asked for (any of `auto`, `concise`, `detailed`): the thought is given as the summary too. */
export const wantsSummary = (settings: OutputSettings): boolean => settings.reasoning.summary !== null;

/**
 * Turns a completion's output parts, in order, into a response's output items and (when `emit`
 * is given) the stream events OpenAI sends for them, each with the next sequence number: a
 * message's `output_item.added`, `content_part.added`, `output_text.delta`…, `output_text.done`,
 * `content_part.done`, `output_item.done`; a function call's `output_item.added`,
 * `function_call_arguments.delta`…, `.done`, `output_item.done`; a reasoning model's thought (a
 * `reasoning` item) as `output_item.added`, `content_part.added` (`reasoning_text`),
 * `reasoning_text.delta`…, `.done`, `content_part.done`, and with a summary asked for the same
 * text also as `reasoning_summary_part.added`, `reasoning_summary_text.delta`…, `.done`,
 * `reasoning_summary_part.done`, then `output_item.done`. The items and events are a pure
 * function of the parts, the response id and its settings, so a replay on any instance repeats them.
 */
export class ResponseOutput {
  private readonly items: ItemState[] = [];
  private open: ItemState | undefined;
  /** With log probabilities, a text delta waits for the log probabilities of its tokens (the part after it). */
  private pendingDelta: string | undefined;
  private deltaHead = '';
  /** The heads of a reasoning delta's events: its text's, and its summary's (empty without a summary). */
  private reasoningHead = '';
  private summaryHead = '';
  private sequence: number;
  private readonly withLogprobs: boolean;
  private readonly withSummary: boolean;
  private readonly calledAs: NonNullable<OutputSettings['calledAs']>;
  /** The output is its leading items (a compaction_trigger's): no empty message stands in for an answer. */
  private readonly leadingOnly: boolean;

  constructor(
    private readonly responseId: string,
    settings: OutputSettings,
    private readonly emit?: (frame: ResponseEventFrame) => void,
    firstSequenceNumber = 0,
  ) {
    this.sequence = firstSequenceNumber;
    this.withLogprobs = settings.logprobs;
    this.withSummary = wantsSummary(settings);
    this.calledAs = settings.calledAs ?? {};
    this.items.push(...(settings.leading ?? []));
    this.leadingOnly = settings.leadingOnly === true;
  }

  /** The items the output begins with (settings.leading), as they go out before the model's: `output_item.added`, `output_item.done`. */
  announceLeading(): void {
    this.items.forEach((item, outputIndex) => {
      if (item.type !== 'compaction') return;
      this.event('response.output_item.added', { output_index: outputIndex, item });
      this.event('response.output_item.done', { output_index: outputIndex, item });
    });
  }

  /** The sequence number the next event gets. */
  get nextSequenceNumber(): number {
    return this.sequence;
  }

  add(parts: OutputPart[]): void {
    for (const part of parts.filter(isGenerationPart)) {
      // The Responses API has no `n`: every part is of choice 0; its end comes with the completion's.
      if (part.choice !== 0 || part.type === 'choice_end') continue;
      switch (part.type) {
        case 'text':
          this.addText(part.text);
          break;
        case 'reasoning':
          this.addReasoning(part.text);
          break;
        case 'logprobs':
          this.addLogprobs(part.content);
          break;
        case 'tool_call':
          this.addToolCall(part.index, part.id, part.name, part.arguments);
          break;
      }
    }
  }

  /**
   * Closes the item still open (`incomplete` when the answer was cut short) and returns every
   * item. An answer that ended with no message and no call gets an empty message, as the chat
   * door gives empty content; one cut short while thinking ends with its thought, as OpenAI's do.
   */
  finish(cutShort: boolean): ConversationItem[] {
    const answered = this.items.some((item) => item.type !== 'reasoning' && item.type !== 'mcp_list_tools' && item.type !== 'compaction');
    if (!answered && !this.leadingOnly && (!cutShort || this.items.length === 0)) this.openMessage();
    this.close(cutShort ? 'incomplete' : 'completed');
    return this.snapshot();
  }

  /** The items so far as they stand (a response still in progress, or one that failed). */
  snapshot(): ConversationItem[] {
    return this.items.map((item) => this.itemObject(item));
  }

  private itemObject(item: ItemState): ConversationItem {
    switch (item.type) {
      case 'message':
        return messageItem(item);
      case 'function_call':
        return functionCallItem(item);
      case 'reasoning':
        return reasoningItem(item, this.withSummary);
      case 'mcp_list_tools':
        return listToolsItem(item);
      case 'compaction':
        return item;
    }
  }

  /** Ends a model turn of a tool loop: its open item is closed (an MCP call's arguments are done, the call not yet made). */
  closeTurn(): void {
    this.close('completed');
  }

  /** The MCP calls of the turn waiting to be made (not those waiting for approval). */
  pendingMcpCalls(): PendingMcpCall[] {
    return this.items.flatMap((item) =>
      item.type === 'function_call' && item.mcp && !item.mcp.approval && !item.mcp.settled
        ? [{ id: item.id, server: item.mcp.server, name: item.name, arguments: item.arguments }]
        : [],
    );
  }

  /** Whether the output waits on the client: an approval asked, or a call of its own function tool. */
  waitsOnClient(): boolean {
    return this.items.some((item) => item.type === 'function_call' && (!item.mcp || item.mcp.approval) && item.status !== 'incomplete');
  }

  /** A server's tools, listed: `output_item.added`, `mcp_list_tools.in_progress`, `.completed` (or `.failed`), `output_item.done`. */
  addListTools(server: string, tools: McpToolInfo[], error: string | null): void {
    this.close('completed');
    const outputIndex = this.items.length;
    const listed: ListToolsState = { type: 'mcp_list_tools', id: outputItemId(this.responseId, 'mcpl', outputIndex), server, tools, error };
    this.items.push(listed);
    const where = { item_id: listed.id, output_index: outputIndex };
    this.event('response.output_item.added', { output_index: outputIndex, item: { ...listToolsItem(listed), tools: [] } });
    this.event('response.mcp_list_tools.in_progress', where);
    this.event(error === null ? 'response.mcp_list_tools.completed' : 'response.mcp_list_tools.failed', where);
    this.event('response.output_item.done', { output_index: outputIndex, item: listToolsItem(listed) });
  }

  /** A call the client approved, about to be made: its item, as a model's call would have opened it. */
  addApprovedCall(approvalRequestId: string, server: string, name: string, args: string): PendingMcpCall {
    this.close('completed');
    const outputIndex = this.items.length;
    const call: FunctionCallState = {
      type: 'function_call',
      id: outputItemId(this.responseId, 'mcp', outputIndex),
      callId: approvalRequestId,
      name,
      arguments: args,
      index: -1,
      status: 'completed',
      mcp: { server, approval: false, settled: false, output: null, error: null, approvalRequestId },
    };
    this.items.push(call);
    const where = { item_id: call.id, output_index: outputIndex };
    this.event('response.output_item.added', { output_index: outputIndex, item: functionCallItem(call) });
    this.event('response.mcp_call.in_progress', where);
    this.event('response.mcp_call_arguments.done', { ...where, arguments: args });
    return { id: call.id, server, name, arguments: args };
  }

  /** An MCP call made: `mcp_call.completed` (or `.failed`), then its `output_item.done` with the output or error. */
  settleMcpCall(id: string, result: McpCallResult): void {
    const { call, outputIndex } = this.mcpCall(id);
    Object.assign(call.mcp, { settled: true, ...('output' in result ? { output: result.output } : { error: result.error }) });
    this.event('output' in result ? 'response.mcp_call.completed' : 'response.mcp_call.failed', { item_id: id, output_index: outputIndex });
    this.event('response.output_item.done', { output_index: outputIndex, item: functionCallItem(call) });
  }

  /** MCP calls the response will not make (it reached its bound on calls): `incomplete`, and done. */
  abandonMcpCalls(): void {
    for (const pending of this.pendingMcpCalls()) {
      const { call, outputIndex } = this.mcpCall(pending.id);
      call.status = 'incomplete';
      call.mcp.settled = true;
      this.event('response.output_item.done', { output_index: outputIndex, item: functionCallItem(call) });
    }
  }

  /** The MCP call item of this id (one pendingMcpCalls or addApprovedCall gave), and where it stands in the output. */
  private mcpCall(id: string): { call: FunctionCallState & { mcp: McpCallState }; outputIndex: number } {
    const outputIndex = this.items.findIndex((item) => item.id === id);
    return { call: this.items[outputIndex] as FunctionCallState & { mcp: McpCallState }, outputIndex };
  }

  /** Emits an event of `type` whose JSON is built by `body` (without its type and sequence number). */
  event(type: string, body: object): void {
    if (!this.emit) return;
    const data = JSON.stringify({ type, ...body, sequence_number: this.sequence++ });
    this.emit({ event: type, data });
  }

  private addText(text: string): void {
    if (this.open?.type !== 'message') this.openMessage();
    const message = this.open as MessageState;
    message.text += text;
    if (!this.emit) return;
    if (this.withLogprobs) {
      this.flushDelta([]);
      this.pendingDelta = text;
    } else {
      this.sendDelta(text, '[]');
    }
  }

  private addLogprobs(content: TokenLogprob[]): void {
    if (this.open?.type !== 'message') return;
    this.open.logprobs.push(...content);
    this.flushDelta(content);
  }

  private flushDelta(logprobs: TokenLogprob[]): void {
    if (this.pendingDelta === undefined) return;
    const text = this.pendingDelta;
    this.pendingDelta = undefined;
    this.sendDelta(text, JSON.stringify(logprobs));
  }

  /** The hot path of a stream: one delta event per piece of text, built around a prepared head. */
  private sendDelta(text: string, logprobsJson: string): void {
    const data = `${this.deltaHead}${JSON.stringify(text)},"logprobs":${logprobsJson},"sequence_number":${this.sequence++}}`;
    this.emit?.({ event: 'response.output_text.delta', data });
  }

  private addReasoning(text: string): void {
    if (this.open?.type !== 'reasoning') this.openReasoning();
    (this.open as ReasoningState).text += text;
    if (!this.emit) return;
    const tail = `${JSON.stringify(text)},"sequence_number":`;
    this.emit({ event: 'response.reasoning_text.delta', data: `${this.reasoningHead}${tail}${this.sequence++}}` });
    if (this.withSummary) this.emit({ event: 'response.reasoning_summary_text.delta', data: `${this.summaryHead}${tail}${this.sequence++}}` });
  }

  private openReasoning(): void {
    this.close('completed');
    const outputIndex = this.items.length;
    const reasoning: ReasoningState = { type: 'reasoning', id: outputItemId(this.responseId, 'rs', outputIndex), text: '', status: 'in_progress' };
    this.items.push(reasoning);
    this.open = reasoning;
    const at = `"item_id":${JSON.stringify(reasoning.id)},"output_index":${outputIndex}`;
    this.reasoningHead = `{"type":"response.reasoning_text.delta",${at},"content_index":0,"delta":`;
    this.summaryHead = `{"type":"response.reasoning_summary_text.delta",${at},"summary_index":0,"delta":`;
    this.event('response.output_item.added', { output_index: outputIndex, item: this.itemObject(reasoning) });
    const where = { item_id: reasoning.id, output_index: outputIndex };
    this.event('response.content_part.added', { ...where, content_index: 0, part: { type: 'reasoning_text', text: '' } });
    if (this.withSummary) this.event('response.reasoning_summary_part.added', { ...where, summary_index: 0, part: { type: 'summary_text', text: '' } });
  }

  private addToolCall(index: number, id: string | undefined, name: string | undefined, args: string): void {
    const current = this.open;
    if (current?.type !== 'function_call' || current.index !== index || id !== undefined) {
      this.close('completed');
      const outputIndex = this.items.length;
      const call: FunctionCallState = {
        type: 'function_call',
        id: outputItemId(this.responseId, 'fc', outputIndex),
        callId: id ?? newToolCallId(),
        name: '',
        arguments: '',
        index,
        status: 'in_progress',
      };
      if (name !== undefined) this.nameCall(call, name);
      if (call.custom) call.id = outputItemId(this.responseId, 'ctc', outputIndex);
      if (call.mcp) call.id = outputItemId(this.responseId, call.mcp.approval ? 'mcpr' : 'mcp', outputIndex);
      this.items.push(call);
      this.open = call;
      this.event('response.output_item.added', { output_index: outputIndex, item: functionCallItem(call) });
      if (call.mcp && !call.mcp.approval) this.event('response.mcp_call.in_progress', { item_id: call.id, output_index: outputIndex });
    }
    const call = this.open as FunctionCallState;
    if (name !== undefined && call.name === '') this.nameCall(call, name);
    if (args === '') return;
    call.arguments += args;
    const where = { item_id: call.id, output_index: this.items.length - 1 };
    if (call.mcp) {
      // An approval request streams no arguments: it is whole in its `output_item.done`.
      if (!call.mcp.approval) this.event('response.mcp_call_arguments.delta', { ...where, delta: args });
      return;
    }
    if (!call.custom) {
      this.event('response.function_call_arguments.delta', { ...where, delta: args });
      return;
    }
    const input = call.custom.reader.feed(args);
    call.custom.input += input;
    if (input !== '') this.event('response.custom_tool_call_input.delta', { ...where, delta: input });
  }

  /** The call's name as the client knows it: a namespace member's own, with its namespace; a custom tool's call reads its input. */
  private nameCall(call: FunctionCallState, modelName: string): void {
    const member = Object.hasOwn(this.calledAs, modelName) ? this.calledAs[modelName] : undefined;
    call.name = member?.name ?? modelName;
    if (member?.namespace !== undefined) call.namespace = member.namespace;
    if (member?.custom) call.custom = { reader: new CustomInputReader(), input: '' };
    if (member?.mcp) call.mcp = { ...member.mcp, settled: false, output: null, error: null, approvalRequestId: null };
  }

  private openMessage(): void {
    this.close('completed');
    const outputIndex = this.items.length;
    const message: MessageState = { type: 'message', id: outputItemId(this.responseId, 'msg', outputIndex), text: '', logprobs: [], status: 'in_progress' };
    this.items.push(message);
    this.open = message;
    this.deltaHead = `{"type":"response.output_text.delta","item_id":${JSON.stringify(message.id)},"output_index":${outputIndex},"content_index":0,"delta":`;
    this.event('response.output_item.added', { output_index: outputIndex, item: messageItem(message) });
    this.event('response.content_part.added', {
      item_id: message.id,
      output_index: outputIndex,
      content_index: 0,
      part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
    });
  }

  private close(status: 'completed' | 'incomplete'): void {
    const item = this.open;
    if (!item) return;
    this.open = undefined;
    this.flushDelta([]);
    if (item.type !== 'mcp_list_tools' && item.type !== 'compaction') item.status = status;
    const outputIndex = this.items.length - 1;
    const where = { item_id: item.id, output_index: outputIndex };
    switch (item.type) {
      case 'message': {
        const part = { type: 'output_text', text: item.text, annotations: [], logprobs: item.logprobs };
        this.event('response.output_text.done', { ...where, content_index: 0, text: item.text, logprobs: item.logprobs });
        this.event('response.content_part.done', { ...where, content_index: 0, part });
        break;
      }
      case 'function_call':
        if (item.mcp) {
          if (item.mcp.approval) break;
          this.event('response.mcp_call_arguments.done', { ...where, arguments: item.arguments });
          // The call is made next (McpToolLoop), and its item is done once it has been; one cut short is not made.
          if (status === 'completed') return;
          item.mcp.settled = true;
          break;
        }
        if (item.custom)
          this.event('response.custom_tool_call_input.done', { ...where, input: (customToolCallItem(item, item.custom) as { input: string }).input });
        else this.event('response.function_call_arguments.done', { ...where, name: item.name, arguments: item.arguments });
        break;
      case 'reasoning':
        this.event('response.reasoning_text.done', { ...where, content_index: 0, text: item.text });
        this.event('response.content_part.done', { ...where, content_index: 0, part: { type: 'reasoning_text', text: item.text } });
        if (this.withSummary) {
          this.event('response.reasoning_summary_text.done', { ...where, summary_index: 0, text: item.text });
          const cut = status === 'incomplete' ? { status: 'incomplete' } : {};
          this.event('response.reasoning_summary_part.done', { ...where, summary_index: 0, part: { type: 'summary_text', text: item.text }, ...cut });
        }
        break;
      case 'mcp_list_tools':
      case 'compaction':
        break;
    }
    this.event('response.output_item.done', { output_index: outputIndex, item: this.itemObject(item) });
  }
}
