import { isRecord } from '@app/contracts';
import type {
  ChatMessage,
  GenerateJobInput,
  JsonValue,
  LogprobsOptions,
  ResponseFormat,
  ToolCall,
  ToolChoice,
  ToolDefinition,
  ToolOptions,
} from '@app/contracts';
import { randomInt } from 'node:crypto';
import { FUNCTION_NAME } from '../common/request-limits';
import { generationJob } from '../common/generation-job';
import { MAX_MESSAGE_CHARS } from '../common/request-limits';
import { checkedSchema } from '../common/schema-checks';
import { OpenAiError } from '../../errors/openai-error';
import type { CreateResponseDto } from './responses-request.dto';
import { itemText } from './response-items';
import { hostedToolTurn } from './hosted-tool-items';
import type { ConversationItem } from './response-items';
import { NamespacedToolNames } from './namespace-tools';
import type { CalledAs } from './namespace-tools';
import { customCallArguments, customTool } from './custom-tools';
import type { CustomToolEcho } from './custom-tools';
import { declinedText, mcpResultText } from './mcp-items';
import { compactionMessages, latestCompaction, readCompaction } from './compaction-content';
import type { CompactionContent } from './compaction-content';
import type { McpItem } from './mcp-items';
import type { McpOffer, McpToolEcho } from './mcp-tools';

const invalid = (message: string, param: string): OpenAiError => OpenAiError.invalidRequest(message, param, 'invalid_value');

/** A function tool as the Response object echoes it. */
export interface FunctionToolEcho {
  type: 'function';
  name: string;
  description: string | null;
  parameters: Record<string, unknown> | null;
  strict: boolean;
}

/** `text.format` as the Response object echoes it. */
export type TextFormatEcho =
  { type: 'text' } | { type: 'json_object' } | { type: 'json_schema'; name: string; schema: Record<string, unknown>; strict: boolean; description?: string };

/** The request's settings as every Response object of it repeats them. */
export interface ResponseSettings {
  instructions: string | null;
  tools: OfferedToolEcho[];
  /** The names the model was offered for namespace members and custom tools, and who they are (absent in records stored before namespaces). */
  calledAs?: Record<string, CalledAs>;
  toolChoice: unknown;
  parallelToolCalls: boolean;
  textFormat: TextFormatEcho;
  maxOutputTokens: number | null;
  temperature: number;
  topP: number;
  /** At most this many MCP calls in the response (`max_tool_calls`; null: the service's own bound). */
  maxToolCalls?: number | null;
  frequencyPenalty: number;
  presencePenalty: number;
  topLogprobs: number;
  /** Output text carries each token's log probability (`include: ["message.output_text.logprobs"]` or `top_logprobs`). */
  logprobs: boolean;
  reasoning: { effort: string | null; summary: string | null };
  truncation: 'auto' | 'disabled';
  user: string | null;
  safetyIdentifier: string | null;
  promptCacheKey: string | null;
  previousResponseId: string | null;
  /** The conversation it belongs to (absent in records stored before conversations). */
  conversation?: string | null;
  metadata: Record<string, string>;
  store: boolean;
  background: boolean;
  /** Items the output begins with, made before the model ran: server-side compaction's item (server-compaction.ts). */
  leading?: Array<ConversationItem & { type: 'compaction' }>;
  /** The leading items are the whole output: a final `compaction_trigger` asked for the compaction, not an answer. */
  leadingOnly?: boolean;
}

/** A `namespace` tool as the Response object echoes it: its member tools as offered. */
export interface NamespaceToolEcho {
  type: 'namespace';
  name: string;
  description: string | null;
  tools: Array<FunctionToolEcho | CustomToolEcho>;
}

/** A tool as the Response object echoes it. */
export type OfferedToolEcho = FunctionToolEcho | CustomToolEcho | NamespaceToolEcho | McpToolEcho;

/** A function or custom tool, offered by its own name. */
function ownTool(tool: Record<string, unknown>, param: string): { definition: ToolDefinition; echo: FunctionToolEcho | CustomToolEcho } {
  return tool.type === 'custom' ? customTool(tool, checkedName(tool.name, `${param}.name`), param) : functionTool(tool, param);
}

const isOwnTool = (tool: unknown): tool is Record<string, unknown> => isRecord(tool) && (tool.type === 'function' || tool.type === 'custom');

/**
 * Function and custom tools, and those of `namespace` tools (Codex sends each MCP server's tools
 * as one), are offered to the model; a namespace member's call comes back with its own name and
 * its `namespace`, a custom tool's as a `custom_tool_call` (NamespacedToolNames). Tools that run on
 * OpenAI's side (web search, file search, code interpreter, image generation, computer use,
 * `tool_search`) cannot run here, so they are not offered. A remote MCP server's tools, as it listed
 * them (`mcpOffers`, McpToolLoop), are offered as its members, their calls made by the service. A
 * client that sends hosted tools by default (Codex sends `web_search`) still works; the response's
 * `tools` lists only what the model was offered.
 */
function offeredTools(
  request: CreateResponseDto,
  mcpOffers: McpOffer[],
): {
  definitions: ToolDefinition[];
  echoes: OfferedToolEcho[];
  names: NamespacedToolNames;
} {
  const tools = request.tools ?? [];
  const definitions: ToolDefinition[] = [];
  const echoes: OfferedToolEcho[] = [];
  const plain = new Set<string>();
  const customs: string[] = [];
  for (const [index, tool] of tools.entries()) {
    // The model would be told it has the server's tools and never get them: refused rather than dropped.
    if (tool.type === 'mcp' && !mcpOffers.some((offer) => offer.index === index)) {
      throw OpenAiError.invalidRequest(`Remote MCP servers ('mcp' tools) cannot be used here.`, `tools[${index}].server_url`, 'unsupported_value');
    }
    if (!isOwnTool(tool)) continue;
    const offered = ownTool(tool, `tools[${index}]`);
    if (plain.has(offered.definition.name)) throw invalid(`Two tools are named '${offered.definition.name}'.`, `tools[${index}].name`);
    plain.add(offered.definition.name);
    if (tool.type === 'custom') customs.push(offered.definition.name);
    definitions.push(offered.definition);
    echoes.push(offered.echo);
  }
  const names = new NamespacedToolNames(plain);
  for (const name of customs) names.offerCustom(name);
  const namespaces = new Set<string>();
  for (const [index, tool] of tools.entries()) {
    if (tool.type !== 'namespace') continue;
    const param = `tools[${index}]`;
    const { description, tools: members } = tool;
    const name = checkedName(tool.name, `${param}.name`);
    if (namespaces.has(name)) throw invalid(`Two namespaces are named '${name}'.`, `${param}.name`);
    namespaces.add(name);
    if (!Array.isArray(members) || members.length === 0) throw invalid(`'${param}.tools' must be a non-empty array of tools.`, `${param}.tools`);
    const memberEchoes: Array<FunctionToolEcho | CustomToolEcho> = [];
    const memberNames = new Set<string>();
    for (const [at, member] of (members as unknown[]).entries()) {
      if (!isOwnTool(member)) continue;
      const offered = ownTool(member, `${param}.tools[${at}]`);
      const own = offered.definition.name;
      if (memberNames.has(own)) throw invalid(`Two tools of namespace '${name}' are named '${own}'.`, `${param}.tools[${at}].name`);
      memberNames.add(own);
      definitions.push({ ...offered.definition, name: names.offer(name, own, member.type === 'custom') });
      memberEchoes.push(offered.echo);
    }
    echoes.push({ type: 'namespace', name, description: typeof description === 'string' ? description : null, tools: memberEchoes });
  }
  for (const offer of mcpOffers) {
    for (const tool of offer.tools) definitions.push(mcpToolDefinition(names.offerMcp(offer.label, tool.name, offer.needsApproval(tool)), tool));
    echoes.push(offer.echo);
  }
  return { definitions, echoes, names };
}

/**
 * An MCP server's tool as the model is offered it: its input schema enforced as a function tool's
 * without `strict` (as far as the grammar can); one no grammar can read at all (the server's fault,
 * not the client's) leaves the arguments a free JSON object.
 */
function mcpToolDefinition(name: string, tool: { description: string | null; input_schema: Record<string, unknown> }): ToolDefinition {
  let parameters: ToolDefinition['parameters'];
  try {
    parameters = checkedSchema({ type: 'object', ...tool.input_schema }, 'tools', false, 'invalid_function_parameters');
  } catch {
    parameters = checkedSchema({ type: 'object' }, 'tools', false, 'invalid_function_parameters');
  }
  return { name, ...(tool.description ? { description: tool.description } : {}), parameters };
}

/** A tool's, namespace's or format's name, as OpenAI allows them. */
function checkedName(name: unknown, param: string): string {
  if (typeof name !== 'string' || !FUNCTION_NAME.test(name))
    throw invalid(`'${param}' must be 1-64 characters of a-z, A-Z, 0-9, underscores and dashes.`, param);
  return name;
}

/** One function tool, checked: what the engine gets, and what the Response object echoes. */
function functionTool(tool: Record<string, unknown>, param: string): { definition: ToolDefinition; echo: FunctionToolEcho } {
  const { description, parameters, strict } = tool;
  const name = checkedName(tool.name, `${param}.name`);
  if (description !== undefined && description !== null && typeof description !== 'string')
    throw invalid(`'${param}.description' must be a string.`, `${param}.description`);
  if (strict !== undefined && strict !== null && typeof strict !== 'boolean') throw invalid(`'${param}.strict' must be a boolean.`, `${param}.strict`);
  const schema = (parameters ?? { type: 'object', properties: {} }) as JsonValue;
  if ((schema as { type?: unknown }).type !== 'object') throw invalid(`A function's parameters must be a JSON Schema of type 'object'.`, `${param}.parameters`);
  // Arguments always satisfy the schema here (a grammar), strict or not; strict, as at OpenAI, is the
  // default for a Responses function tool, so a keyword no grammar enforces is refused unless strict: false.
  const definition: ToolDefinition = {
    name,
    ...(typeof description === 'string' ? { description } : {}),
    parameters: checkedSchema(schema, `${param}.parameters`, strict !== false, 'invalid_function_parameters'),
  };
  const echo: FunctionToolEcho = {
    type: 'function',
    name,
    description: typeof description === 'string' ? description : null,
    parameters: schema as Record<string, unknown>,
    strict: strict !== false,
  };
  return { definition, echo };
}

function toolChoice(request: CreateResponseDto, names: Set<string>, calledAs: Record<string, CalledAs>): ToolChoice {
  const choice = request.tool_choice;
  if (choice === undefined || choice === null || choice === 'auto') return { type: 'auto' };
  if (choice === 'none' || choice === 'required') return { type: choice };
  if (choice.type === 'mcp') return mcpToolChoice(choice, names, calledAs);
  if (choice.type === 'function' || choice.type === 'custom') {
    const name = choice.name;
    if (typeof name !== 'string' || !names.has(name))
      throw invalid(`'tool_choice' names '${String(name)}', which is not among the ${choice.type} tools.`, 'tool_choice');
    return { type: 'function', name };
  }
  if (choice.type === 'allowed_tools') {
    throw OpenAiError.invalidRequest(
      `'tool_choice' of type 'allowed_tools' is not supported here; send only the allowed tools.`,
      'tool_choice.type',
      'unsupported_value',
    );
  }
  // A hosted tool (web_search_preview, file_search, …): none of them runs here.
  throw OpenAiError.invalidRequest(
    `'tool_choice' asks for the hosted tool ${JSON.stringify(choice.type)}, which cannot run here.`,
    'tool_choice.type',
    'unsupported_value',
  );
}

/**
 * `{type: "mcp", server_label, name}`: that tool of that server; without a name, any of its tools
 * when it is the only one offering tools; without a label (the Agents SDK's `toolChoice: "mcp"`),
 * the one server there is.
 */
function mcpToolChoice(choice: Record<string, unknown>, names: Set<string>, calledAs: Record<string, CalledAs>): ToolChoice {
  const servers = new Set([...names].flatMap((modelName) => calledAs[modelName]?.mcp?.server ?? []));
  const { name } = choice;
  const label = choice.server_label ?? (servers.size === 1 ? [...servers][0] : undefined);
  const serverTools = [...names].filter((modelName) => calledAs[modelName]?.mcp?.server === label);
  if (serverTools.length === 0)
    throw invalid(`'tool_choice' names the MCP server ${JSON.stringify(label)}, which offers no tools here.`, 'tool_choice.server_label');
  if (name === undefined || name === null) {
    if (serverTools.length === names.size) return { type: 'required' };
    throw OpenAiError.invalidRequest(
      `'tool_choice' of type 'mcp' without a 'name' is supported only when that server's tools are the only tools.`,
      'tool_choice.name',
      'unsupported_value',
    );
  }
  const modelName = serverTools.find((offered) => calledAs[offered].name === name);
  if (modelName === undefined)
    throw invalid(`'tool_choice' names ${JSON.stringify(name)}, which the MCP server ${JSON.stringify(label)} does not offer.`, 'tool_choice.name');
  return { type: 'function', name: modelName };
}

function textFormat(request: CreateResponseDto): { format: ResponseFormat; echo: TextFormatEcho } {
  const format = request.text?.format;
  if (!format || format.type === 'text') return { format: { type: 'text' }, echo: { type: 'text' } };
  if (format.type === 'json_object') return { format: { type: 'json_object' }, echo: { type: 'json_object' } };
  const { schema, strict, description } = format;
  const name = checkedName(format.name, 'text.format.name');
  if (schema === undefined || schema === null || typeof schema !== 'object' || Array.isArray(schema)) {
    throw OpenAiError.invalidRequest(`Missing required parameter: 'text.format.schema'.`, 'text.format.schema', 'missing_required_parameter');
  }
  if (strict !== undefined && strict !== null && typeof strict !== 'boolean') throw invalid(`'text.format.strict' must be a boolean.`, 'text.format.strict');
  if (description !== undefined && typeof description !== 'string') throw invalid(`'text.format.description' must be a string.`, 'text.format.description');
  return {
    format: { type: 'json_schema', name, schema: checkedSchema(schema as JsonValue, 'text.format.schema', strict === true, 'invalid_json_schema') },
    echo: {
      type: 'json_schema',
      name,
      schema: schema as Record<string, unknown>,
      strict: strict === true,
      ...(typeof description === 'string' ? { description } : {}),
    },
  };
}

function checkedText(text: string, param: string): string {
  if (text.length > MAX_MESSAGE_CHARS) throw OpenAiError.tooLarge(`An item may hold at most ${MAX_MESSAGE_CHARS} characters.`, param);
  return text;
}

/**
 * The conversation as the engine sees it: instructions first, then the items in order. Function
 * calls (and replayed calls of tools never run here, hosted-tool-items.ts) join the assistant
 * message before them (or start one); each output must answer a call made earlier. A reasoning item's text (its `content`, else its summary) becomes the thought of
 * the assistant turn that follows it, which a reasoning model's template renders where it does
 * (Qwen3's: only in the turns after the last user message); one that no assistant output follows
 * is dropped. A reasoning item's `encrypted_content` is not read: nothing here encrypts it, and
 * another provider's cannot be decrypted (OpenAI drops what it cannot decrypt in the same way).
 * A `compaction` item is read as the user messages it kept and its summary; the latest one that
 * kept them stands for every item before it except system and developer messages.
 */
export function toChatMessages(
  instructions: string | null,
  items: ConversationItem[],
  firstInputIndex: number,
  /** The name the model knows a call by (a namespace member's or an MCP server's tool's is the name it was offered). */
  modelName: (call: { name: string; namespace?: string; server?: string }) => string = (call) => call.name,
  /** What a `compaction` item seals, opened (a 400 naming `at` when it does not open; compaction-content.ts reads it). */
  openCompaction: (sealed: string, at: string) => string = (_, at) => {
    throw invalid('This compaction item cannot be read here.', `${at}.encrypted_content`);
  },
): ChatMessage[] {
  const messages: ChatMessage[] = instructions ? [{ role: 'system', content: checkedText(instructions, 'instructions') }] : [];
  const calledIds = new Set<string>();
  const approvalRequests = new Map<string, McpItem & { type: 'mcp_approval_request' }>();
  let thought: string | undefined;
  const takeThought = (): { reasoning?: string } => {
    const reasoning = thought;
    thought = undefined;
    return reasoning ? { reasoning } : {};
  };
  const addCall = (call: ToolCall): void => {
    const last = messages.at(-1);
    calledIds.add(call.id);
    if (last?.role === 'assistant' && thought === undefined) last.toolCalls = [...(last.toolCalls ?? []), call];
    else messages.push({ role: 'assistant', content: '', toolCalls: [call], ...takeThought() });
  };
  const addOutput = (callId: string, text: string, at: string): void => {
    if (!calledIds.has(callId)) throw invalid(`No tool call found for function call output with call_id ${callId}.`, `${at}.call_id`);
    thought = undefined;
    messages.push({ role: 'tool', content: checkedText(text, `${at}.output`), toolCallId: callId });
  };
  const atOf = (position: number): string => `input[${Math.max(position - firstInputIndex, 0)}]`;
  const opened = (item: { encrypted_content: string }, position: number): CompactionContent =>
    readCompaction(openCompaction(item.encrypted_content, atOf(position)));
  // A compaction item that holds its kept user messages stands for everything before it but the instructions.
  const latest = latestCompaction(items, opened);
  items.forEach((item, position) => {
    const at = atOf(position);
    const isInstruction = item.type === 'message' && (item.role === 'system' || item.role === 'developer');
    if (latest && position < latest.position && !isInstruction) return;
    switch (item.type) {
      case 'message': {
        const content = checkedText(itemText(item.content), `${at}.content`);
        if (item.role === 'assistant') {
          messages.push({ role: 'assistant', content, ...takeThought() });
        } else {
          thought = undefined;
          messages.push({ role: item.role === 'user' ? 'user' : 'system', content });
        }
        break;
      }
      case 'function_call':
        addCall({ id: item.call_id, name: modelName(item), arguments: item.arguments });
        break;
      case 'custom_tool_call':
        addCall({ id: item.call_id, name: modelName(item), arguments: customCallArguments(checkedText(item.input, `${at}.input`)) });
        break;
      case 'function_call_output':
      case 'custom_tool_call_output':
        addOutput(item.call_id, item.output, at);
        break;
      case 'mcp_list_tools':
        // What it listed is offered as tools.
        break;
      case 'mcp_call':
        addCall({ id: item.id, name: modelName({ name: item.name, server: item.server_label }), arguments: item.arguments });
        addOutput(item.id, mcpResultText(item), at);
        break;
      case 'mcp_approval_request':
        approvalRequests.set(item.id, item);
        break;
      case 'mcp_approval_response': {
        // An approved call is made, and its `mcp_call` item follows; a declined one is told to the model.
        const asked = approvalRequests.get(item.approval_request_id);
        if (asked && !item.approve) {
          addCall({ id: asked.id, name: modelName({ name: asked.name, server: asked.server_label }), arguments: asked.arguments });
          addOutput(asked.id, declinedText(item.reason), at);
        }
        break;
      }
      case 'compaction':
        thought = undefined;
        messages.push(...compactionMessages(position === latest?.position ? latest.content : opened(item, position)));
        break;
      case 'reasoning': {
        const parts = item.content?.length ? item.content : item.summary;
        const text = checkedText(parts.map((part) => part.text).join(''), `${at}.content`);
        thought = text === '' ? thought : `${thought ?? ''}${text}`;
        break;
      }
      default: {
        const turn = hostedToolTurn(item);
        if ('call' in turn) addCall({ ...turn.call, arguments: checkedText(turn.call.arguments, at) });
        else addOutput(turn.output.callId, turn.output.text, at);
      }
    }
  });
  if (!messages.some((message) => message.role !== 'system'))
    throw OpenAiError.invalidRequest(`Missing required parameter: 'input'.`, 'input', 'missing_required_parameter');
  return messages;
}

function logprobsOptions(request: CreateResponseDto): LogprobsOptions | undefined {
  const asked = request.include?.includes('message.output_text.logprobs') === true || (request.top_logprobs ?? 0) > 0;
  return asked ? { top: request.top_logprobs ?? 0 } : undefined;
}

/** OpenAI's `fast` and `ultrafast` are its priority processing. */
export const requestedTier = (tier: string | undefined): string | undefined => (tier === 'fast' || tier === 'ultrafast' ? 'priority' : tier);

export interface ResponseJob {
  job: GenerateJobInput;
  settings: ResponseSettings;
}

/**
 * The id of the conversation the request continues (`conversation`: an id or `{id}`), if any.
 * Its turn is appended when its stored record ends, so it needs `store`; and it has one history,
 * so not `previous_response_id` as well (a 400 as OpenAI words it).
 */
export function conversationOf(request: CreateResponseDto): string | undefined {
  const conversation = request.conversation;
  if (conversation === undefined || conversation === null) return undefined;
  const id = typeof conversation === 'string' ? conversation : isRecord(conversation) ? conversation.id : undefined;
  if (typeof id !== 'string' || id === '')
    throw OpenAiError.invalidRequest(`'conversation' must be a conversation id or an object with its 'id'.`, 'conversation', 'invalid_type');
  if (request.previous_response_id !== undefined && request.previous_response_id !== null)
    throw OpenAiError.invalidRequest(
      `Mutually exclusive parameters: Ensure you are only providing one of: 'previous_response_id' or 'conversation'.`,
      'conversation',
      'mutually_exclusive_parameters',
    );
  if (request.store === false) throw invalid(`A response on a conversation is stored; 'conversation' requires 'store': true.`, 'store');
  return id;
}

/**
 * A validated request, with its conversation items resolved (`previous_response_id` and
 * `item_reference`), becomes the same job the chat door queues, plus the settings its Response
 * objects echo. Its affinity key is its `prompt_cache_key`, else the key of the response it
 * continues (`continuedKey`); without either, placement hashes the conversation's start, which
 * a continuation shares with the response before it while instructions and tools stay the same.
 */
export function toResponseJob(
  request: CreateResponseDto,
  items: ConversationItem[],
  firstInputIndex: number,
  responseId: string,
  acceptedAt: number,
  maxQueueWaitMs: number,
  continuedKey?: string,
  openCompaction?: (sealed: string, at: string) => string,
  /** The request's remote MCP servers' tools, as listed (McpToolLoop). */
  mcpOffers: McpOffer[] = [],
): ResponseJob {
  if (request.prompt !== undefined && request.prompt !== null)
    throw OpenAiError.invalidRequest(`Reusable prompts ('prompt') are not available here; send 'instructions' and 'input'.`, 'prompt', 'unsupported_parameter');
  // A background response is polled, cancelled and resumed through its stored record.
  if (request.background === true && request.store === false)
    throw invalid(`Background responses must be stored; 'background': true requires 'store': true.`, 'background');
  const { definitions, echoes, names } = offeredTools(request, mcpOffers);
  const choice = toolChoice(request, new Set(definitions.map((tool) => tool.name)), names.calledAs());
  if (definitions.length === 0 && (choice.type === 'required' || choice.type === 'function'))
    throw invalid(`'tool_choice' requires function tools in 'tools'.`, 'tool_choice');
  const tools: ToolOptions | undefined = definitions.length > 0 ? { definitions, choice, parallel: request.parallel_tool_calls ?? true } : undefined;
  const { format, echo } = textFormat(request);
  const logprobs = logprobsOptions(request);
  const instructions = request.instructions ?? null;
  const job = generationJob({
    id: responseId,
    request,
    messages: toChatMessages(
      instructions,
      items,
      firstInputIndex,
      (call) => (call.server === undefined ? names.modelName(call) : names.mcpModelName(call.server, call.name)),
      openCompaction,
    ),
    // The Responses API has no seed; answers must vary, and a retried job samples the same way.
    sampling: { maxTokens: request.max_output_tokens ?? undefined, stop: [], seed: randomInt(2 ** 32) },
    tools,
    responseFormat: format,
    logprobs,
    reasoningEffort: request.reasoning?.effort,
    truncation: request.truncation === 'auto' ? 'auto' : undefined,
    fallbackAffinityKey: continuedKey,
    conflictParams: { format: 'text.format', logprobs: 'top_logprobs' },
    acceptedAt,
    maxQueueWaitMs,
  });
  const settings: ResponseSettings = {
    instructions,
    tools: echoes,
    calledAs: names.calledAs(),
    toolChoice: request.tool_choice ?? 'auto',
    parallelToolCalls: request.parallel_tool_calls ?? true,
    textFormat: echo,
    maxOutputTokens: request.max_output_tokens ?? null,
    temperature: job.options.sampling.temperature,
    topP: job.options.sampling.topP,
    maxToolCalls: request.max_tool_calls ?? null,
    frequencyPenalty: job.options.sampling.frequencyPenalty,
    presencePenalty: job.options.sampling.presencePenalty,
    topLogprobs: request.top_logprobs ?? 0,
    logprobs: logprobs !== undefined,
    // `generate_summary` is the older name of `summary`.
    reasoning: { effort: request.reasoning?.effort ?? null, summary: request.reasoning?.summary ?? request.reasoning?.generate_summary ?? null },
    truncation: request.truncation === 'auto' ? 'auto' : 'disabled',
    user: request.user ?? null,
    safetyIdentifier: request.safety_identifier ?? null,
    promptCacheKey: request.prompt_cache_key ?? null,
    previousResponseId: request.previous_response_id ?? null,
    conversation: conversationOf(request) ?? null,
    metadata: request.metadata ?? {},
    store: request.store ?? true,
    background: request.background ?? false,
  };
  return { job, settings };
}
