import { isJsonObject, newToolCallId } from '@app/contracts';
import type { CompletionUsage, FinishReason, LogprobsPart, OutputSink, TokenLogprob, ToolCall, TopLogprob } from '@app/contracts';
import type { GenerationOutcome } from '../inference-engine';
import type { ServerSentEvent } from './server-sent-events';

/** An upstream error as its servers word it: OpenAI's `{error: {...}}`, TGI's `{error: "..."}`, llama.cpp's bare object. */
export interface UpstreamErrorDetail {
  message: string;
  /** The HTTP status, or the numeric `code` of an error sent inside a stream (vLLM, llama.cpp). */
  status: number | undefined;
  type: string | undefined;
  param: string | null;
  code: string | null;
}

type Fields = Record<string, unknown>;
const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
const isStatus = (value: unknown): value is number => Number.isInteger(value) && (value as number) >= 100 && (value as number) <= 599;

/** Reads an upstream error body (or an error event's data), whichever shape its server uses. */
export function upstreamErrorDetail(body: unknown, status?: number): UpstreamErrorDetail {
  const wrapped = isJsonObject(body) && body.error !== undefined ? body.error : body;
  const error: Fields = isJsonObject(wrapped) ? wrapped : { message: text(wrapped) };
  const outer = isJsonObject(body) ? body : {};
  return {
    message: text(error.message) ?? text(outer.message) ?? 'The upstream server reported an error without a message.',
    status: status ?? [error.code, error.status, outer.code, outer.status].find(isStatus),
    type: text(error.type) ?? text(outer.error_type),
    param: text(error.param) ?? null,
    code: text(error.code) ?? null,
  };
}

/** The upstream sent an error inside its stream (an `error` event, or data holding `{"error": ...}`). */
export class UpstreamStreamError extends Error {
  constructor(readonly detail: UpstreamErrorDetail) {
    super(detail.message);
    this.name = 'UpstreamStreamError';
  }
}

/** The upstream's stream cannot be read as an answer: bad JSON, or it ended with no finish reason. */
export class UpstreamProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UpstreamProtocolError';
  }
}

interface CallInProgress {
  /** Our index: calls are numbered in the order they open, whatever the upstream numbers them. */
  index: number;
  id: string;
  /** Empty until the upstream names the call: the call opens (goes out) with its name. */
  name: string;
  arguments: string;
}

/**
 * Turns an upstream's stream of chat completion chunks into this service's output parts and
 * outcome: text deltas into text parts, `delta.tool_calls` fragments into tool-call parts (the
 * first with the call's id and name), `finish_reason` and the usage chunk into the outcome.
 * It reads what real servers send: a usage chunk with empty `choices`, usage on the last choice
 * chunk instead, tool calls whose name comes in a later fragment than their id, no `[DONE]`.
 */
export class UpstreamAnswer {
  private text = '';
  private readonly calls = new Map<number, CallInProgress>();
  private finishReason: string | undefined;
  private usage: CompletionUsage | undefined;
  private outputChunks = 0;
  private wrote = false;

  constructor(private readonly output: OutputSink) {}

  /** Whether any part has gone to the output: after that, a failure cannot be retried unnoticed. */
  get wroteOutput(): boolean {
    return this.wrote;
  }

  /** Takes one event; false once the stream says it is complete (`[DONE]`). */
  accept(event: ServerSentEvent): boolean {
    if (event.data === '[DONE]') return false;
    let payload: unknown;
    try {
      payload = JSON.parse(event.data);
    } catch {
      throw new UpstreamProtocolError('The upstream server sent an event that is not JSON.');
    }
    if (event.event === 'error' || (isJsonObject(payload) && payload.error !== undefined && payload.error !== null)) {
      throw new UpstreamStreamError(upstreamErrorDetail(payload));
    }
    if (!isJsonObject(payload)) throw new UpstreamProtocolError('The upstream server sent an event that is not a chunk.');
    this.takeChunk(payload);
    return true;
  }

  /** The whole answer, once the stream has ended; an answer without a finish reason was cut short. */
  outcome(): GenerationOutcome {
    if (this.finishReason === undefined) throw new UpstreamProtocolError('The upstream stream ended before the answer did (no finish_reason).');
    const toolCalls: ToolCall[] = [...this.calls.values()].map(({ id, name, arguments: args }) => ({ id, name, arguments: args }));
    if ([...this.calls.values()].some((call) => call.name === '')) throw new UpstreamProtocolError('The upstream server sent a tool call without a name.');
    const finishReason: FinishReason = this.finishReason === 'length' ? 'length' : toolCalls.length > 0 ? 'tool_calls' : 'stop';
    // Servers that ignore stream_options.include_usage: one chunk is about one token.
    const usage = this.usage ?? { prompt_tokens: 0, completion_tokens: this.outputChunks, total_tokens: this.outputChunks };
    return { text: this.text, ...(toolCalls.length > 0 ? { toolCalls } : {}), finishReason, usage };
  }

  private takeChunk(chunk: Fields): void {
    const usage = readUsage(chunk.usage);
    if (usage) this.usage = usage;
    const choices = Array.isArray(chunk.choices) ? (chunk.choices as unknown[]) : [];
    // Only `n: 1` is ever asked for: choice 0 is the answer.
    const choice = choices.find((item): item is Fields => isJsonObject(item) && (item.index === undefined || item.index === 0));
    if (!choice) return;
    const delta = isJsonObject(choice.delta) ? choice.delta : {};
    // A legacy completions chunk carries its text as `choice.text`.
    const content = text(delta.content) ?? text(choice.text);
    // A reasoning model's thinking: `reasoning_content` (DeepSeek, llama.cpp's server, older vLLM) or `reasoning` (newer vLLM).
    const reasoning = text(delta.reasoning_content) ?? text(delta.reasoning);
    if (reasoning) this.write({ type: 'reasoning', choice: 0, text: reasoning });
    const toolCalls = Array.isArray(delta.tool_calls) ? (delta.tool_calls as unknown[]).filter(isJsonObject) : [];
    if ((content !== undefined && content !== '') || toolCalls.length > 0) this.outputChunks += 1;
    if (content) {
      this.text += content;
      this.write({ type: 'text', choice: 0, text: content });
    }
    for (const fragment of toolCalls) this.takeToolCallFragment(fragment);
    const legacy = readLegacyLogprobs(choice.logprobs);
    const logprobs = legacy?.content ?? readLogprobs(choice.logprobs);
    if (legacy?.unscored) this.write({ type: 'logprobs', choice: 0, content: logprobs, unscored: legacy.unscored });
    else if (logprobs.length > 0) this.write({ type: 'logprobs', choice: 0, content: logprobs });
    const finishReason = text(choice.finish_reason);
    if (finishReason !== undefined) this.finishReason ??= finishReason;
  }

  private takeToolCallFragment(fragment: Fields): void {
    const fn = isJsonObject(fragment.function) ? fragment.function : {};
    const id = text(fragment.id);
    const upstreamIndex = Number.isInteger(fragment.index) ? (fragment.index as number) : this.indexWithoutNumber(id);
    let call = this.calls.get(upstreamIndex);
    if (!call) {
      call = { index: this.calls.size, id: id || newToolCallId(), name: '', arguments: '' };
      this.calls.set(upstreamIndex, call);
    }
    // A call is open once it has a name (it never loses it); its first fragment then goes out with it.
    const wasOpen = call.name !== '';
    call.name ||= text(fn.name) ?? '';
    const args = text(fn.arguments) ?? '';
    call.arguments += args;
    if (!wasOpen && call.name !== '') {
      this.write({ type: 'tool_call', choice: 0, index: call.index, id: call.id, name: call.name, arguments: call.arguments });
    } else if (wasOpen && args !== '') {
      this.write({ type: 'tool_call', choice: 0, index: call.index, arguments: args });
    }
  }

  /** A fragment without `index`: a new call when it brings an id not seen yet, else the latest call. */
  private indexWithoutNumber(id: string | undefined): number {
    const known = [...this.calls.entries()];
    const sameId = known.find(([, call]) => id !== undefined && call.id === id);
    if (sameId) return sameId[0];
    if (id !== undefined || known.length === 0) return known.length === 0 ? 0 : Math.max(...known.map(([index]) => index)) + 1;
    return known[known.length - 1][0];
  }

  private write(part: Parameters<OutputSink['write']>[0]): void {
    this.wrote = true;
    this.output.write(part);
  }
}

function readTopLogprob(value: unknown): TopLogprob | undefined {
  if (!isJsonObject(value) || typeof value.token !== 'string' || typeof value.logprob !== 'number') return undefined;
  // Servers send `bytes: null` (or nothing) for plain text, and -Infinity as a very large negative number.
  const bytes =
    Array.isArray(value.bytes) && value.bytes.every((byte) => Number.isInteger(byte)) ? (value.bytes as number[]) : [...Buffer.from(value.token, 'utf8')];
  return { token: value.token, logprob: Math.max(-9999, Math.min(0, value.logprob)), bytes };
}

/** `choice.logprobs.content` of an upstream chunk; entries that are not OpenAI's shape are dropped. */
function readLogprobs(value: unknown): TokenLogprob[] {
  if (!isJsonObject(value) || !Array.isArray(value.content)) return [];
  return value.content.flatMap((entry: unknown): TokenLogprob[] => {
    const token = readTopLogprob(entry);
    if (!token || !isJsonObject(entry)) return [];
    const top = Array.isArray(entry.top_logprobs) ? entry.top_logprobs.map(readTopLogprob).filter((item) => item !== undefined) : [];
    return [{ ...token, top_logprobs: top }];
  });
}

/**
 * `choice.logprobs` of a legacy completions chunk: `{tokens, token_logprobs, top_logprobs}`, the
 * alternatives a map of token to number; an echoed prompt's first token, which nothing predicts,
 * has a null. Undefined for any other shape.
 */
function readLegacyLogprobs(value: unknown): Pick<LogprobsPart, 'content' | 'unscored'> | undefined {
  if (!isJsonObject(value) || !Array.isArray(value.tokens) || !Array.isArray(value.token_logprobs)) return undefined;
  const tops: unknown[] = Array.isArray(value.top_logprobs) ? value.top_logprobs : [];
  const numbers: unknown[] = value.token_logprobs;
  let unscored: LogprobsPart['unscored'];
  const content = value.tokens.flatMap((token: unknown, index): TokenLogprob[] => {
    const scored = readTopLogprob({ token, logprob: numbers[index] });
    if (!scored) {
      if (index === 0 && typeof token === 'string') unscored = { token, bytes: [...Buffer.from(token, 'utf8')] };
      return [];
    }
    const alternatives = isJsonObject(tops[index]) ? Object.entries(tops[index]).map(([text, logprob]) => readTopLogprob({ token: text, logprob })) : [];
    const top = alternatives.filter((item) => item !== undefined).sort((a, b) => b.logprob - a.logprob);
    return [{ ...scored, top_logprobs: top }];
  });
  return { content, ...(unscored ? { unscored } : {}) };
}

function readUsage(value: unknown): CompletionUsage | undefined {
  if (!isJsonObject(value)) return undefined;
  const count = (field: unknown): number | undefined => (Number.isInteger(field) && (field as number) >= 0 ? (field as number) : undefined);
  const prompt = count(value.prompt_tokens);
  const completion = count(value.completion_tokens);
  if (prompt === undefined || completion === undefined) return undefined;
  const reported = isJsonObject(value.prompt_tokens_details) ? count(value.prompt_tokens_details.cached_tokens) : undefined;
  const cached = reported === undefined ? undefined : Math.min(reported, prompt);
  const reasoning = isJsonObject(value.completion_tokens_details) ? count(value.completion_tokens_details.reasoning_tokens) : undefined;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: count(value.total_tokens) ?? prompt + completion,
    // The upstream's own prefix cache (vLLM's, llama.cpp's server's), when it reports one.
    ...(cached === undefined ? {} : { prompt_tokens_details: { cached_tokens: cached } }),
    ...(reasoning === undefined ? {} : { completion_tokens_details: { reasoning_tokens: Math.min(reasoning, completion) } }),
  };
}
