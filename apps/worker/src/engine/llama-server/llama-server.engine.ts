import { MAX_CHOICES } from '@app/contracts';
import type { EngineCapabilities, FinishReason, TokenLogprob } from '@app/contracts';
import type { ChatWrapper, Llama, LlamaModel } from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import { answerBudget, GenerationAbortedError } from '../inference-engine';
import type {
  EmbeddingOutcome,
  GenerationOutcome,
  GenerationRequest,
  InferenceEngine,
  RankOutcome,
  TokenizeOutcome,
  TokenizeRequest,
} from '../inference-engine';
import { schemaGbnf } from '../llama-grammars';
import { isEmbeddingModel } from '../llama-embeddings';
import { plainPromptTokens, vocabularyTokens } from '../llama-prompt-completion';
import { LlamaPromptRenderer } from '../llama-prompt-rendering';
import { isRankingModel } from '../llama-ranking';
import { endOfGenerationTokens, vocabularySize } from '../llama-sampling';
import { StopSequences } from '../stop-sequences';
import { probabilityFields, samplingFields, streamCompletion, toTokenLogprobs } from './llama-server-completion';
import type { CompletionChunk } from './llama-server-completion';
import { LlamaServerProcess, waitForHealth } from './llama-server-process';
import { ServerBackedEngine } from './server-backed-engine';
import type { RunningServer } from './llama-server-process';
import { LlamaServerPoolingEngine, pooledBy, serverPooling } from './llama-server-pooling.engine';
import { LlamaServerRankingEngine } from './llama-server-ranking.engine';
import type { LlamaServerProcessOptions } from './llama-server-process';
import { ToolCallStream } from '../llama-tool-calls';
import { CallParser } from './call-parser';
import { callSyntax, markText, offeredCalls } from './llama-server-tools';
import { ThoughtSplitter } from './thought-splitter';

/** How to start the server (unless `url` names one beside the worker), and where the engine logs. */
export interface LlamaServerEngineOptions extends LlamaServerProcessOptions {
  /** LLAMA_SERVER_URL: a server beside the worker; none is started then. */
  url: string;
  /** PROMPT_CACHE: a slot's prompt from earlier requests is reused (`cache_prompt`); on when absent. */
  promptCache?: boolean;
}

/** A JSON object, as `response_format: {type: "json_object"}` asks: the project's own grammar, as for schemas. */
const ANY_OBJECT_GRAMMAR = schemaGbnf({ type: 'object' });

/**
 * llama.cpp's own server as the engine. The worker keeps what makes answers the same as on the
 * llama engine: the model's chat template (node-llama-cpp's, from the model's vocabulary only:
 * no weights are loaded here), the project's grammars, stop sequences, budgets; llama-server
 * runs the model: each answer is one streamed `/completion` of the prompt's token ids, on a slot
 * the server picks by the prompt it already holds (`cache_prompt`), so a conversation's next turn
 * lands where its prefix is. Tool calls are read from the answer in the template's own call syntax,
 * their arguments under the project's grammar (lazy: from the call prefix on, unless a call is
 * required). Plain prompts are laid out as the llama engine lays them out (its start token, or its
 * FIM tokens around a suffix) and completed without a template; an echoed prompt's own log
 * probabilities are not offered (`/completion` scores only what it generates). An embedding
 * model gets an embedding server instead (LlamaServerPoolingEngine), a reranker a ranking one
 * (LlamaServerRankingEngine).
 */
export class LlamaServerEngine extends ServerBackedEngine implements InferenceEngine {
  readonly capabilities: EngineCapabilities;
  readonly slots: number;
  private readonly prompts: LlamaPromptRenderer;
  private readonly stopTriggers: string[];
  private readonly thoughtMarks: { prefix: string; suffix: string } | undefined;
  private readonly calls: ReturnType<typeof callSyntax>;

  private constructor(
    llama: Llama,
    model: LlamaModel,
    chatWrapper: ChatWrapper,
    server: RunningServer,
    readonly contextSize: number,
    slots: number,
    private readonly promptCache: boolean,
  ) {
    super(llama, model, server);
    this.slots = slots;
    this.prompts = new LlamaPromptRenderer(chatWrapper, model, contextSize);
    this.stopTriggers = textStopTriggers(chatWrapper);
    this.calls = callSyntax(chatWrapper, model);
    const thought = chatWrapper.settings.segments?.thought;
    this.thoughtMarks = thought?.suffix !== undefined ? { prefix: markText(thought.prefix), suffix: markText(thought.suffix) } : undefined;
    this.capabilities = {
      kinds: ['generate', 'tokenize'],
      tools: true,
      grammar: true,
      logprobs: this.thoughtMarks === undefined,
      maxChoices: MAX_CHOICES,
      plainPrompts: true,
      fillInTheMiddle: model.tokens.infill.prefix !== null && model.tokens.infill.suffix !== null,
      logitBiasTokens: vocabularySize(model),
      unbiasableTokens: endOfGenerationTokens(model),
    };
  }

  /**
   * Loads the model's vocabulary and chat template, then starts llama-server (or finds the one at
   * LLAMA_SERVER_URL); an embedding model's is an embedding server, a reranker's a ranking one.
   */
  static async start(options: LlamaServerEngineOptions): Promise<InferenceEngine> {
    const { getLlama, LlamaLogLevel, resolveChatWrapper } = await import('node-llama-cpp');
    const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
    let server: RunningServer | undefined;
    try {
      const model = await llama.loadModel({ modelPath: options.modelPath, vocabOnly: true });
      const ranks = isRankingModel(model);
      const pooling = !ranks && isEmbeddingModel(model) ? pooledBy(model) : undefined;
      // As the llama engine's embedder and ranker: no more context than the model was trained on (its file says; no weights are loaded here).
      const trained = model.fileInsights.trainContextSize ?? options.contextSize;
      const embeddings: LlamaServerProcessOptions['embeddings'] = ranks ? 'ranks' : pooling ? serverPooling(pooling) : undefined;
      const asked = embeddings ? { ...options, embeddings, contextSize: Math.min(options.contextSize, trained) } : options;
      server = options.url !== '' ? { url: options.url.replace(/\/+$/, ''), stop: () => Promise.resolve() } : await LlamaServerProcess.start(asked);
      if (options.url !== '') await waitForHealth(server.url, 60_000);
      const props = (await (await fetch(`${server.url}/props`)).json()) as { total_slots: number; default_generation_settings: { n_ctx: number } };
      if (props.total_slots < options.slots)
        throw new Error(`llama-server at ${server.url} has ${props.total_slots} slots; this worker runs ${options.slots} sequences`);
      const contextSize = props.default_generation_settings.n_ctx;
      const serves = ranks ? ', ranking' : pooling ? `, embedding (${pooling} pooling)` : '';
      options.log(`llama-server at ${server.url}: ${props.total_slots} slots of ${contextSize} tokens${serves}`);
      // An input is evaluated in one batch of the slot's context (the server's KV cache is shared by its slots).
      if (ranks) return new LlamaServerRankingEngine(llama, model, server, asked.contextSize, options.slots);
      if (pooling) return new LlamaServerPoolingEngine(llama, model, server, pooling, asked.contextSize, options.slots);
      return new LlamaServerEngine(llama, model, resolveChatWrapper(model), server, contextSize, options.slots, options.promptCache ?? true);
    } catch (error) {
      await server?.stop();
      await llama.dispose();
      throw error;
    }
  }

  async generate(request: GenerationRequest): Promise<GenerationOutcome> {
    if (request.prompt) return this.completePrompt(request);
    const { sampling, tools, responseFormat, logprobs, thinking, signal, output } = request;
    const calls = offeredCalls(tools, this.calls);
    const answerStart = this.prompts.answerStart(thinking, calls?.mustCall ?? false);
    const rendered = this.prompts.fittedPrompt(request, answerStart, calls?.functions).prompt;
    const prompt = calls?.mustCall ? [...rendered, ...this.model.tokenize(this.calls.syntax.prefix, true)] : rendered;
    const maxTokens = answerBudget(this.contextSize, prompt.length, sampling.maxTokens);
    const grammar =
      responseFormat?.type === 'json_schema' ? schemaGbnf(responseFormat.schema) : responseFormat?.type === 'json_object' ? ANY_OBJECT_GRAMMAR : undefined;

    // Stop sequences are matched here, as on the llama engine; with logprobs the text waits for the end, to go out beside its tokens' numbers.
    const stopped = new AbortController();
    const stop = new StopSequences(sampling.stop, logprobs ? () => undefined : (text) => output.write({ type: 'text', choice: 0, text }));
    const begins = answerStart === 'in thought' ? 'in thought' : answerStart === 'after thought' ? 'in answer' : 'perhaps in thought';
    const toAnswer = (text: string): void => {
      if (!signal.aborted && !stop.push(text)) stopped.abort();
    };
    const toolCalls = new ToolCallStream(output);
    const callsRead = new CallParser(
      this.calls.syntax,
      toAnswer,
      (chunk) => {
        if (signal.aborted) return;
        stop.release(); // no text follows a call: what was held back for a stop sequence goes first
        toolCalls.onParamsChunk(chunk);
      },
      calls?.mustCall,
    );
    const thoughts = new ThoughtSplitter(this.thoughtMarks, begins, output, calls ? (text) => callsRead.push(text) : toAnswer);
    const body = {
      prompt,
      n_predict: maxTokens,
      stop: this.stopTriggers,
      ...samplingFields(sampling),
      ...(grammar !== undefined ? { grammar } : {}),
      ...calls?.fields,
      ...probabilityFields(logprobs),
    };
    const { text, last, completionTokens } = await this.streamAnswer(
      body,
      request,
      stop,
      stopped,
      (chunk) => thoughts.push(chunk),
      () => {
        thoughts.finish();
        callsRead.finish();
      },
    );
    const called = toolCalls.calls.length > 0;
    const finishReason: FinishReason = !stop.stopped && last?.stop_type === 'limit' ? 'length' : called ? 'tool_calls' : 'stop';
    return {
      text,
      ...(called ? { toolCalls: toolCalls.calls } : {}),
      finishReason,
      usage: {
        // The conversation as rendered, as the llama engine counts it (a required call's prefix is the answer's).
        prompt_tokens: rendered.length,
        completion_tokens: completionTokens,
        total_tokens: rendered.length + completionTokens,
        prompt_tokens_details: { cached_tokens: last?.timings?.cache_n ?? 0 },
        ...(this.thoughtMarks ? { completion_tokens_details: { reasoning_tokens: countTokens(this.model, thoughts.reasoning) } } : {}),
      },
    };
  }

  /**
   * A plain prompt (`POST /v1/completions`): one `/completion` of its tokens, no template and no
   * end-of-turn triggers; `echo` gives its text back first, stop sequences and logprobs as in a chat
   * (`echo` with `logprobs` is refused before: the engine lacks `promptLogprobs`).
   */
  private async completePrompt(request: GenerationRequest): Promise<GenerationOutcome> {
    const { sampling, logprobs, signal, output } = request;
    const { prompt, suffixTokens, echoed } = plainPromptTokens(this.model, request.prompt!);
    // As on the llama engine, an infill keeps one more token free beyond the answer.
    const maxTokens = answerBudget(this.contextSize, prompt.length, sampling.maxTokens, suffixTokens ? 2 : 1);
    const echo = request.prompt!.echo ? echoed : '';
    if (echo !== '') output.write({ type: 'text', choice: 0, text: echo });
    const stopped = new AbortController();
    const stop = new StopSequences(sampling.stop, logprobs ? () => undefined : (text) => output.write({ type: 'text', choice: 0, text }));
    // max_tokens 0 (an evaluation harness scoring an echoed prompt): nothing is generated.
    const body = { prompt, n_predict: maxTokens, stop: [], ...samplingFields(sampling), ...probabilityFields(logprobs) };
    const { text, last, completionTokens } = await this.streamAnswer(body, request, stop, stopped, (chunk) => {
      if (!signal.aborted && !stop.push(chunk)) stopped.abort();
    });
    return {
      text: echo + text,
      finishReason: stop.stopped || (last !== undefined && last.stop_type !== 'limit') ? 'stop' : 'length',
      usage: {
        prompt_tokens: prompt.length,
        completion_tokens: completionTokens,
        total_tokens: prompt.length + completionTokens,
        prompt_tokens_details: { cached_tokens: last?.timings?.cache_n ?? 0 },
      },
    };
  }

  /**
   * One `/completion`, streamed chunk by chunk into `read` (llama-server streams a chunk per
   * generated token) until its end or until `stopped` (a stop sequence) closes it, then `finish`;
   * answers the text as the stop sequences kept it (its tokens' numbers written after it, with
   * logprobs), the last chunk, and the tokens it cost. `n_predict` 0 sends nothing.
   */
  private async streamAnswer(
    body: { n_predict: number },
    { logprobs, signal, output }: GenerationRequest,
    stop: StopSequences,
    stopped: AbortController,
    read: (text: string) => void,
    finish = (): void => undefined,
  ): Promise<{ text: string; last: CompletionChunk | undefined; completionTokens: number }> {
    const scored: Array<{ text: string; logprobs: TokenLogprob[] }> = [];
    let last: CompletionChunk | undefined;
    let generated = 0;
    try {
      const asked = { ...body, cache_prompt: this.promptCache };
      const chunks = body.n_predict === 0 ? [] : streamCompletion(this.server.url, asked, AbortSignal.any([signal, stopped.signal]));
      for await (const chunk of chunks) {
        last = chunk;
        generated++;
        if (logprobs) scored.push({ text: chunk.content, logprobs: toTokenLogprobs(chunk.completion_probabilities ?? [], logprobs.top) });
        read(chunk.content);
      }
      finish();
    } catch (error) {
      if (signal.aborted) throw new GenerationAbortedError();
      if (!stopped.signal.aborted) throw error;
    }
    if (signal.aborted) throw new GenerationAbortedError();
    const text = stop.finish();
    if (logprobs) writeScoredText(output, text, scored);
    // A stop sequence closes the request: the tokens it had generated by then are what it cost.
    return { text, last, completionTokens: last?.stop ? (last.tokens_predicted ?? generated) : generated };
  }

  embed(): Promise<EmbeddingOutcome> {
    return Promise.reject(new Error('ENGINE=llama-server does not embed'));
  }

  rank(): Promise<RankOutcome> {
    return Promise.reject(new Error('ENGINE=llama-server does not rank'));
  }

  /** The model's own tokenizer, here in the worker; a conversation as `generate` renders it. */
  async tokenize(request: TokenizeRequest): Promise<TokenizeOutcome> {
    await Promise.resolve();
    return vocabularyTokens(this.model, request, this.name, (conversation) => {
      const calls = offeredCalls(conversation.tools, this.calls);
      const answerStart = this.prompts.answerStart(conversation.thinking, calls?.mustCall ?? false);
      return this.prompts.conversationPrompt(conversation, answerStart, calls?.functions);
    });
  }
}

/** The template's end-of-turn triggers that are text (llama-server stops at end-of-generation tokens itself). */
function textStopTriggers(chatWrapper: ChatWrapper): string[] {
  const history = [
    { type: 'user' as const, text: 'x' },
    { type: 'model' as const, response: [] },
  ];
  const { stopGenerationTriggers } = chatWrapper.generateContextState({ chatHistory: history });
  return stopGenerationTriggers
    .filter((trigger) => trigger.values.every((value) => typeof value === 'string' || value.toJSON().type === 'specialTokensText'))
    .map((trigger) => trigger.toString())
    .filter((trigger) => trigger !== '');
}

function countTokens(model: LlamaModel, text: string): number {
  return text === '' ? 0 : model.tokenize(text, false).length;
}

/** Each chunk's text, as far as the answer kept it, followed by its tokens' log probabilities. */
function writeScoredText(output: GenerationRequest['output'], text: string, chunks: Array<{ text: string; logprobs: TokenLogprob[] }>): void {
  let at = 0;
  for (const chunk of chunks) {
    if (at >= text.length && chunk.text !== '') break;
    const piece = text.slice(at, at + chunk.text.length);
    at += chunk.text.length;
    if (piece !== '') output.write({ type: 'text', choice: 0, text: piece });
    if (chunk.logprobs.length > 0) output.write({ type: 'logprobs', choice: 0, content: chunk.logprobs });
  }
}
