import { Logger } from '@nestjs/common';
import { maskUrlCredentials } from '@app/config';
import { encodeVector, MAX_CHOICES } from '@app/contracts';
import type { EngineCapabilities, JobKind } from '@app/contracts';
import OpenAI, { APIConnectionTimeoutError, APIError } from 'openai';
import { ContextLengthExceededError, EngineUnavailableError, GenerationAbortedError, UnsupportedOptionError, UpstreamRejectedError } from './inference-engine';
import type {
  EmbeddingOutcome,
  EmbeddingRequest,
  GenerationOutcome,
  GenerationRequest,
  InferenceEngine,
  RankOutcome,
  RankRequest,
  TokenizeOutcome,
  TokenizeRequest,
} from './inference-engine';
import { UpstreamAnswer, UpstreamProtocolError, UpstreamStreamError, upstreamErrorDetail } from './upstream/upstream-answer';
import type { UpstreamErrorDetail } from './upstream/upstream-answer';
import { readServerSentEvents } from './upstream/server-sent-events';
import { toUpstreamCompletionRequest, toUpstreamMessage, toUpstreamRequest } from './upstream/upstream-request';

export interface OpenAiUpstreamEngineOptions {
  /** The upstream's OpenAI base URL, ending in /v1. */
  baseUrl: string;
  /** Its bearer key; empty sends no Authorization header. */
  apiKey: string;
  /** The model name it serves. */
  model: string;
  /** Requests in flight at once: the worker's job concurrency. */
  maxConcurrency: number;
  /** Longest silence allowed: for the response headers, then between two reads of the stream. */
  timeoutMs: number;
  /** What the API bounds max_tokens by; the upstream still enforces its own. */
  contextSize: number;
  /** What the upstream model serves (UPSTREAM_KINDS); chat completions when absent. */
  kinds?: UpstreamKind[];
}

/**
 * The kinds an upstream may serve: chat completions (and plain prompts), embeddings, reranking
 * (vLLM's and llama.cpp's server's `/v1/rerank`), token counts (vLLM's `/tokenize` and `/detokenize`).
 */
export type UpstreamKind = 'generate' | 'embed' | 'rank' | 'tokenize';

/** An upstream's rerank answer, in the part every server that serves the route shares (vLLM's, llama.cpp's, Jina's). */
interface UpstreamRerank {
  results: Array<{ index: number; relevance_score: number }>;
  usage?: { prompt_tokens?: number; total_tokens?: number };
}

/** Statuses that say the worker is misconfigured (key, permissions, model name), not that the request is wrong. */
const MISCONFIGURED = new Set([401, 403, 404]);
/** 4xx statuses that say "not now" rather than "not this": try again elsewhere. */
const TRANSIENT_4XX = new Set([408, 429]);

/**
 * An OpenAI-compatible server (vLLM, SGLang, TGI, llama.cpp's server, Ollama) as this worker's
 * engine: each job is one streamed upstream request, read as it arrives and written to the output
 * as the project's parts, so clients, limits, cancellation, Bull Board and metrics are the same as
 * with llama.cpp. The official `openai` client sends the request and reads HTTP errors; the body
 * is read here as server-sent events, because llama.cpp's server words a streamed error in a way
 * the client's reader drops (an `error:` line) and an answer cut short must be noticed.
 *
 * Failures are told apart by what the client has seen: a refusal of the request (4xx) is the
 * client's answer; anything else before the first part (5xx, 429, timeout, refused connection,
 * a stream cut short) is EngineUnavailableError, which puts the job back for another worker;
 * after the first part it ends the answer with an error.
 */
export class OpenAiUpstreamEngine implements InferenceEngine {
  readonly name = 'openai-upstream';
  /**
   * The upstream enforces tools, JSON and token ids itself (its vocabulary is not known here, so
   * any logit_bias id is passed on). Choices are asked for one at a time (the use case generates
   * `n` of them).
   */
  readonly capabilities: EngineCapabilities;
  readonly slots: number;
  readonly contextSize: number;
  readonly mayBeUnavailable = true;
  private readonly client: OpenAI;
  /** The server's root, beside `/v1`, where vLLM serves its tokenizer routes. */
  private readonly root: string;
  private readonly logger = new Logger(OpenAiUpstreamEngine.name);

  constructor(private readonly options: OpenAiUpstreamEngineOptions) {
    this.slots = options.maxConcurrency;
    this.root = options.baseUrl.replace(/\/v1\/?$/, '');
    this.contextSize = options.contextSize;
    const kinds: JobKind[] = options.kinds ?? ['generate'];
    this.capabilities = {
      kinds,
      tools: true,
      grammar: true,
      logprobs: true,
      maxChoices: MAX_CHOICES,
      // Passed to its /v1/completions, which serves or refuses them (FIM included) itself.
      plainPrompts: true,
      fillInTheMiddle: true,
      promptLogprobs: true,
      logitBiasTokens: Number.MAX_SAFE_INTEGER,
      unbiasableTokens: [],
    };
    this.client = new OpenAI({
      baseURL: options.baseUrl,
      // The client insists on a key; with none configured, no Authorization header is sent.
      apiKey: options.apiKey || 'none',
      ...(options.apiKey ? {} : { defaultHeaders: { Authorization: null } }),
      organization: null,
      project: null,
      timeout: options.timeoutMs,
      // A failed attempt goes back to the queue, where another worker may take it: no retries here.
      maxRetries: 0,
    });
  }

  async generate(request: GenerationRequest): Promise<GenerationOutcome> {
    const { signal, output } = request;
    const answer = new UpstreamAnswer(output);
    const silence = new SilenceTimer(this.options.timeoutMs);
    const requestSignal = AbortSignal.any([signal, silence.signal]);
    try {
      // A plain prompt goes to the upstream's legacy completions route, a conversation to its chat route.
      const response = await (
        request.prompt
          ? this.client.completions.create(toUpstreamCompletionRequest(this.options.model, request), { signal: requestSignal })
          : this.client.chat.completions.create(toUpstreamRequest(this.options.model, request), { signal: requestSignal })
      ).asResponse();
      if (!response.body) throw new UpstreamProtocolError('The upstream server answered with an empty body.');
      silence.start();
      for await (const event of readServerSentEvents(silence.watch(response.body))) {
        if (!answer.accept(event)) break;
      }
      return answer.outcome();
    } catch (error) {
      if (signal.aborted) throw new GenerationAbortedError();
      throw this.classify(error, answer.wroteOutput, silence.signal.aborted);
    } finally {
      silence.stop();
    }
  }

  /**
   * All the inputs in one upstream request (the door lets only texts or only token ids through,
   * as OpenAI does); the client's `timeout` bounds the wait for its whole answer.
   */
  async embed({ inputs, signal, output }: EmbeddingRequest): Promise<EmbeddingOutcome> {
    try {
      const input = inputs as string[] | number[][];
      const response = await this.client.embeddings.create({ model: this.options.model, input, encoding_format: 'float' }, { signal });
      for (const { index, embedding } of response.data) output.write({ type: 'embedding', index, vector: encodeVector(embedding) });
      return { promptTokens: response.usage.prompt_tokens };
    } catch (error) {
      if (signal.aborted) throw new GenerationAbortedError();
      throw this.classify(error, false, false);
    }
  }

  /** All the documents in one upstream `/v1/rerank` request; a score missing or twice fails the job. */
  async rank({ query, documents, signal, output }: RankRequest): Promise<RankOutcome> {
    let answer: UpstreamRerank;
    try {
      answer = await this.client.post<UpstreamRerank>('/rerank', { body: { model: this.options.model, query, documents }, signal });
    } catch (error) {
      if (signal.aborted) throw new GenerationAbortedError();
      throw this.classify(error, false, false);
    }
    const scored = new Set<number>();
    for (const { index, relevance_score: score } of answer.results ?? []) {
      if (!Number.isInteger(index) || index < 0 || index >= documents.length || scored.has(index) || typeof score !== 'number')
        throw new UpstreamProtocolError(`The upstream server's rerank answer holds an unexpected result (index ${String(index)}).`);
      scored.add(index);
      output.write({ type: 'score', index, score });
    }
    if (scored.size !== documents.length) throw new UpstreamProtocolError(`The upstream server scored ${scored.size} of ${documents.length} documents.`);
    return { promptTokens: answer.usage?.prompt_tokens ?? answer.usage?.total_tokens ?? 0 };
  }

  /**
   * vLLM's `/tokenize` (text, or a conversation as its chat template renders it for an answer)
   * and `/detokenize`, at the server's root beside `/v1`, as vLLM and this service serve them.
   */
  async tokenize(request: TokenizeRequest): Promise<TokenizeOutcome> {
    const { signal } = request;
    const { model } = this.options;
    const { root } = this;
    try {
      if (request.of === 'tokens') {
        const answer = await this.client.post<{ prompt?: unknown }>(`${root}/detokenize`, { body: { model, tokens: request.tokens }, signal });
        if (typeof answer.prompt !== 'string') throw new UpstreamProtocolError('The upstream server answered /detokenize without a prompt.');
        return { text: answer.prompt };
      }
      const body =
        request.of === 'text' ? { model, prompt: request.text, add_special_tokens: request.specialTokens } : this.conversationBody(request.conversation);
      const answer = await this.client.post<{ tokens?: unknown }>(`${root}/tokenize`, { body, signal });
      const { tokens } = answer;
      if (!Array.isArray(tokens) || !tokens.every((token) => Number.isInteger(token) && (token as number) >= 0))
        throw new UpstreamProtocolError('The upstream server answered /tokenize without token ids.');
      return { tokens: tokens as number[] };
    } catch (error) {
      if (signal.aborted) throw new GenerationAbortedError();
      if (error instanceof UpstreamProtocolError) throw error;
      throw this.classify(error, false, false);
    }
  }

  /** A conversation as vLLM's `/tokenize` takes one: its messages and tools, rendered up to where the answer starts. */
  private conversationBody({ messages, tools, thinking }: Extract<TokenizeRequest, { of: 'conversation' }>['conversation']): object {
    // vLLM turns thinking off through template arguments no other server reads: counted as it is, it would count another prompt.
    if (thinking === false) throw new UnsupportedOptionError(this.name, 'reasoning', 'a count of a conversation answered without thinking');
    return {
      model: this.options.model,
      messages: messages.map(toUpstreamMessage),
      add_generation_prompt: true,
      ...(tools
        ? { tools: tools.definitions.map(({ name, description, parameters }) => ({ type: 'function', function: { name, description, parameters } })) }
        : {}),
    };
  }

  /** What a failure means for the job: the client's answer, a retry elsewhere, or a broken answer. */
  private classify(error: unknown, wroteOutput: boolean, silent: boolean): Error {
    const described = describeUpstreamFailure(error, silent, this.options.timeoutMs);
    const failure = { ...described, message: this.redact(described.message) };
    this.logger.warn(`upstream request failed${wroteOutput ? ' mid-answer' : ''}: ${failure.status ?? 'no status'} ${failure.message}`);
    if (wroteOutput) return new Error(`The upstream server failed mid-answer: ${failure.message}`, { cause: error });
    const { status } = failure;
    if (status !== undefined && status >= 400 && status <= 499 && !TRANSIENT_4XX.has(status)) {
      if (MISCONFIGURED.has(status)) return new Error(`The upstream server refused this worker (${status}): ${failure.message}`, { cause: error });
      if (failure.code === 'context_length_exceeded' || failure.type === 'exceed_context_size_error') return new ContextLengthExceededError(failure.message);
      return new UpstreamRejectedError(failure.message, {
        status,
        type: failure.type ?? 'invalid_request_error',
        param: failure.param,
        code: failure.code,
      });
    }
    return new EngineUnavailableError(`The upstream server did not answer: ${failure.message}`, { cause: error });
  }

  /**
   * An upstream's error may repeat the key it was sent (some proxies quote it back), and a
   * connection error the URL it called: neither reaches a log, a job's record or a client.
   */
  private redact(text: string): string {
    const masked = maskUrlCredentials(text);
    return this.options.apiKey === '' ? masked : masked.replaceAll(this.options.apiKey, '***');
  }

  close(): Promise<void> {
    // Keep-alive sockets belong to the process-wide fetch dispatcher and close with it.
    return Promise.resolve();
  }
}

/** Status, message and fields of any failure: an HTTP error, an error in the stream, or a lost connection. */
function describeUpstreamFailure(error: unknown, silent: boolean, timeoutMs: number): UpstreamErrorDetail {
  if (silent || error instanceof APIConnectionTimeoutError) {
    return { message: `no answer within ${timeoutMs} ms`, status: undefined, type: undefined, param: null, code: null };
  }
  if (error instanceof UpstreamStreamError) return error.detail;
  if (error instanceof APIError) {
    const status: unknown = error.status;
    if (typeof status === 'number') return upstreamErrorDetail(error.error, status);
  }
  const message = error instanceof Error ? (error.cause instanceof Error ? `${error.message} (${error.cause.message})` : error.message) : String(error);
  return { message, status: undefined, type: undefined, param: null, code: null };
}

/**
 * Aborts when the upstream keeps silent longer than the limit: for its response headers (the
 * client's own timeout covers those too), then between two reads of the body. Each read only
 * notes the time; the one timer checks on firing whether anything came since.
 */
class SilenceTimer {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private lastActivity = performance.now();

  constructor(private readonly limitMs: number) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  start(): void {
    this.lastActivity = performance.now();
    this.arm(this.limitMs);
  }

  async *watch(body: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
    for await (const chunk of body) {
      this.lastActivity = performance.now();
      yield chunk;
    }
  }

  stop(): void {
    clearTimeout(this.timer);
  }

  private arm(ms: number): void {
    this.timer = setTimeout(() => {
      const silentFor = performance.now() - this.lastActivity;
      if (silentFor >= this.limitMs) this.controller.abort(new Error('upstream silent'));
      else this.arm(this.limitMs - silentFor);
    }, ms);
    this.timer.unref();
  }
}
