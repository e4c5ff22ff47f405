import type { CompletionUsage, OutputPart } from '@app/contracts';
import type { FastifyReply } from 'fastify';
import type { CompletionEnding } from '../../pipeline/completion-runner';
import type { CompletionSink } from '../../pipeline/completion-sink';
import { BufferedReply } from '../common/buffered-reply';
import type { EventSink } from '../common/event-sink';
import { toOpenAiError } from '../../errors/http-error-mapping';
import type { OpenAiError } from '../../errors/openai-error';
import type { ConversationItem } from './response-items';
import { responseObject } from './response-object';
import type { ResponseIdentity, ResponseState } from './response-object';
import { ResponseOutput } from './responses-formatter';

/** How a response ended: its final Response object's state and its output items (to be stored). */
export interface ResponseOutcome {
  state: ResponseState;
  output: ConversationItem[];
}

/** What stopped a response before its answer, besides its token bound: its bound on MCP calls. */
export type CutShortBy = 'max_tool_calls';

/** The state a completed (or cut short) answer leaves. */
export function endedState(output: ConversationItem[], ending: CompletionEnding, cutShortBy?: CutShortBy): ResponseState {
  const cutShort = ending.finishReason === 'length' || cutShortBy !== undefined;
  return {
    status: cutShort ? 'incomplete' : 'completed',
    output,
    usage: ending.usage,
    ...(cutShort ? {} : { completedAtMs: Date.now() }),
    ...(cutShortBy ? { incompleteReason: cutShortBy } : {}),
  };
}

/** The usage of a response that ran no model. */
export const NO_USAGE = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };

/** Usage of a tool loop's turns together. */
export const addedUsage = (total: CompletionUsage | undefined, turn: CompletionUsage): CompletionUsage => {
  if (!total) return turn;
  const cached = (total.prompt_tokens_details?.cached_tokens ?? 0) + (turn.prompt_tokens_details?.cached_tokens ?? 0);
  const reasoning = (total.completion_tokens_details?.reasoning_tokens ?? 0) + (turn.completion_tokens_details?.reasoning_tokens ?? 0);
  return {
    prompt_tokens: total.prompt_tokens + turn.prompt_tokens,
    completion_tokens: total.completion_tokens + turn.completion_tokens,
    total_tokens: total.total_tokens + turn.total_tokens,
    prompt_tokens_details: { cached_tokens: cached },
    completion_tokens_details: { reasoning_tokens: reasoning },
  };
};

/** This door's prompt, which a failure about the prompt names. */
export const PROMPT_PARAM = 'input';

/** What a failure leaves in the Response object: OpenAI's codes for it are few. */
export function failedState(output: ConversationItem[], error: OpenAiError): ResponseState {
  const code = error.status === 429 ? 'rate_limit_exceeded' : 'server_error';
  return { status: 'failed', output, error: { code, message: error.message } };
}

/** The client's side of one response: where its output goes and how it ends. */
export interface ResponseReply extends CompletionSink {
  /**
   * Sends the rest once the completion has ended. `beforeLast` runs before the final body or
   * event goes out (the response is stored by then: a client's next turn may reference it at once).
   */
  finish(ending: CompletionEnding, beforeLast: (outcome: ResponseOutcome) => Promise<void>, cutShortBy?: CutShortBy): Promise<void>;
  /**
   * Ends a model turn of a tool loop (McpToolLoop) and gives the output so far, where the service
   * adds the items of what it did between turns.
   */
  betweenTurns(): ResponseOutput;
  /**
   * Reports a failure: rethrown while nothing is on the wire (the exception filter answers with
   * a plain HTTP error), else sent as `response.failed`. Returns what is to be stored.
   */
  fail(error: unknown): ResponseOutcome;
}

/** `POST /v1/responses/input_tokens`: OpenAI's count of a request's input, as the worker's template rendered it. */
export class InputTokensReply extends BufferedReply {
  readonly promptParam = PROMPT_PARAM;

  constructor(private readonly reply: FastifyReply) {
    super();
  }

  async finish(ending: CompletionEnding): Promise<void> {
    await this.reply.send({ object: 'response.input_tokens', input_tokens: ending.usage.prompt_tokens });
  }
}

/**
 * A response's output built where no client hears it (a background tool loop's, on the instance
 * carrying it): a lost worker retries only the current turn's parts, and a failure is the output
 * so far, failed.
 */
export class CollectedResponse implements ResponseReply {
  readonly canRestart = true;
  readonly promptParam = PROMPT_PARAM;
  /** The current turn's parts; the output holds the turns before it (a tool loop's). */
  private parts: OutputPart[] = [];
  private readonly output: ResponseOutput;

  constructor(identity: ResponseIdentity) {
    this.output = new ResponseOutput(identity.id, identity.settings);
  }

  write(parts: OutputPart[]): void {
    this.parts.push(...parts);
  }

  restart(): void {
    this.parts = [];
  }

  betweenTurns(): ResponseOutput {
    this.output.add(this.parts);
    this.parts = [];
    this.output.closeTurn();
    return this.output;
  }

  async finish(ending: CompletionEnding, beforeLast: (outcome: ResponseOutcome) => Promise<void>, cutShortBy?: CutShortBy): Promise<void> {
    await beforeLast(this.outcome(ending, cutShortBy));
  }

  /** How it stands at its end. */
  protected outcome(ending: CompletionEnding, cutShortBy?: CutShortBy): ResponseOutcome {
    this.output.add(this.parts);
    this.parts = [];
    const items = this.output.finish(ending.finishReason === 'length');
    return { state: endedState(items, ending, cutShortBy), output: items };
  }

  fail(error: unknown): ResponseOutcome {
    const state = failedState(this.output.snapshot(), toOpenAiError(error));
    return { state, output: state.output as ConversationItem[] };
  }
}

/** `stream: false`: the Response object in one JSON body, so a lost worker can be retried unnoticed. */
export class BufferedResponse extends CollectedResponse {
  constructor(
    private readonly reply: FastifyReply,
    private readonly identity: ResponseIdentity,
  ) {
    super(identity);
  }

  override async finish(ending: CompletionEnding, beforeLast: (outcome: ResponseOutcome) => Promise<void>, cutShortBy?: CutShortBy): Promise<void> {
    const outcome = this.outcome(ending, cutShortBy);
    await beforeLast(outcome);
    await this.reply.send(responseObject(this.identity, outcome.state));
  }

  /** Nothing is on the wire yet: rethrown, and the exception filter answers it as an HTTP error. */
  override fail(error: unknown): ResponseOutcome {
    throw error;
  }
}

/**
 * `stream: true` (and every response of WebSocket mode): OpenAI's named events as the output
 * arrives, into an EventSink (server-sent events or WebSocket frames). `response.created` and
 * `response.in_progress` go out with the first output (SSE's headers too), so an error found
 * before then is still an ordinary HTTP error (or `error` event). Over SSE frames are numbered by
 * sequence number; a resumed stream skips those up to its `after` (SseResponse's FrameIds).
 */
export class StreamedResponse implements ResponseReply {
  readonly canRestart = false;
  readonly promptParam = PROMPT_PARAM;
  private readonly output: ResponseOutput;
  private started = false;

  constructor(
    private readonly sse: EventSink,
    private readonly identity: ResponseIdentity,
  ) {
    this.output = new ResponseOutput(identity.id, identity.settings, (frame) => this.sse.send(frame.data, frame.event));
  }

  /** Sends the headers before any output (a resumed stream). */
  open(): void {
    this.sse.open();
  }

  write(parts: OutputPart[]): void {
    this.start();
    this.output.add(parts);
  }

  restart(): void {
    throw new Error('a streamed response cannot restart');
  }

  betweenTurns(): ResponseOutput {
    this.start();
    this.output.closeTurn();
    return this.output;
  }

  async finish(ending: CompletionEnding, beforeLast: (outcome: ResponseOutcome) => Promise<void>, cutShortBy?: CutShortBy): Promise<void> {
    this.start();
    const items = this.output.finish(ending.finishReason === 'length');
    const state = endedState(items, ending, cutShortBy);
    await beforeLast({ state, output: items });
    this.output.event(state.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: responseObject(this.identity, state) });
    this.sse.end(false);
  }

  /** Ends with no output and no model run (a WebSocket's warm-up, `generate: false`): created, in progress, completed. */
  async prepared(beforeLast: (outcome: ResponseOutcome) => Promise<void>): Promise<void> {
    this.start();
    const state: ResponseState = { status: 'completed', output: [], usage: NO_USAGE, completedAtMs: Date.now() };
    await beforeLast({ state, output: [] });
    this.output.event('response.completed', { response: responseObject(this.identity, state) });
    this.sse.end(false);
  }

  fail(error: unknown): ResponseOutcome {
    if (!this.sse.isOpen && !this.started) throw error;
    this.start();
    const state = failedState(this.output.snapshot(), toOpenAiError(error));
    this.output.event('response.failed', { response: responseObject(this.identity, state) });
    this.sse.end(false);
    return { state, output: state.output as ConversationItem[] };
  }

  private start(): void {
    if (this.started) return;
    this.started = true;
    const response = responseObject(this.identity, { status: 'in_progress', output: [] });
    this.output.event('response.created', { response });
    this.output.event('response.in_progress', { response });
    this.output.announceLeading();
  }
}
