import { MAX_CHOICES, callsAllowed, newToolCallId, parallelCallsAllowed } from '@app/contracts';
import type { ChatMessage, EngineCapabilities, FinishReason, OutputSink, PromptCachePolicy, SamplingParams, ToolCall, ToolOptions } from '@app/contracts';
import type {
  ChatHistoryItem,
  ChatModelFunctions,
  ChatWrapper,
  LLamaChatGenerateResponseOptions,
  Llama,
  LlamaChat,
  LlamaChatResponseFunctionCallParamsChunk,
  LlamaContext,
  LlamaContextSequence,
  LlamaModel,
  LlamaText,
  Token,
  TokenBias,
} from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import { answerBudget, ContextLengthExceededError, GenerationAbortedError } from './inference-engine';
import type { GenerationOutcome, GenerationRequest, InferenceEngine } from './inference-engine';
import { fitConversation, truncatedCachePolicy } from './conversation-truncation';
import { toChatHistory } from './llama-chat-history';
import type { AnswerStart } from './llama-chat-history';
import { shareDecodeSteps } from './llama-batching';
import { AnswerTokens, scoreAnswer } from './llama-logprobs';
import { busyNeighbours, commonPrefixLength, pickSequence, sharedStart } from './llama-prompt-cache';
import { LlamaGrammars } from './llama-grammars';
import { LlamaToolGrammars } from './llama-tool-grammars';
import { StopSequences } from './stop-sequences';

export interface LlamaCppEngineOptions {
  modelPath: string;
  parallelSequences: number;
  threads: number;
  contextSize: number;
  /** The worker's GPU setting; `'false'` is the CPU. */
  gpu: 'auto' | 'cuda' | 'vulkan' | 'metal' | 'false';
  /** Keep the shared start of prompts in the sequences (PROMPT_CACHE; on when absent). */
  promptCache?: boolean;
  /** Where the engine says which backend and device it got. */
  log?: (message: string) => void;
}

type GenerateOptions = LLamaChatGenerateResponseOptions;

/** Tokens in the model's vocabulary, as its GGUF lists them: the ids logit_bias may name. */
function vocabularySize(model: LlamaModel): number {
  const tokens: unknown = model.fileInfo.metadata.tokenizer?.ggml?.tokens;
  return Array.isArray(tokens) ? tokens.length : 0;
}

/** The vocabulary's end-of-generation tokens: node-llama-cpp's TokenBias skips a bias on any of them. */
function endOfGenerationTokens(model: LlamaModel): number[] {
  return [...model.iterateAllTokens()].filter((token) => model.isEogToken(token));
}

/** Most calls one answer may make when parallel tool calls are allowed. */
const MAX_PARALLEL_CALLS = 8;

/**
 * LlamaChat's words when an answer outgrows the context and dropping history cannot make room: its
 * context shift ("…did not return a history that fits the context size", "Failed to compress chat
 * history for context shift…", "The context size (N) is too small to fit the context shift size")
 * and its last resort ("The context size is too small to generate a response"). "Failed to
 * compress chat history to fit context window" (its decision helpers) is matched by the same words.
 */
const CONTEXT_OVERFLOW =
  /did not return a history that fits the context size|Failed to compress chat history|The context size is too small to generate|too small to fit the context shift size/;

export const isContextOverflow = (error: unknown): boolean => error instanceof Error && CONTEXT_OVERFLOW.test(error.message);

/**
 * The answer outgrew the context (a tool call's syntax is evaluated beyond max_tokens): LlamaChat
 * would go on from a shortened conversation, or fails. Refused as OpenAI refuses what does not fit.
 */
const answerOutgrewContext = (contextSize: number, promptTokens: number): ContextLengthExceededError =>
  new ContextLengthExceededError(
    `This model's maximum context length is ${contextSize} tokens. However, your messages resulted in ${promptTokens} tokens, and the answer did not fit in the rest (a tool call's syntax counts too). Please reduce the length of the messages.`,
  );

/** Tokens LlamaChat needs free after the prompt to answer without shortening the history (its minFreeContextTokens, plus the first answer token). */
const LLAMA_CHAT_MINIMUM_ROOM = 2;

/** A job's prompt, as it came and as the engine rendered it. */
interface RenderedPrompt {
  messages: ChatMessage[];
  history: ChatHistoryItem[];
  functions: ChatModelFunctions | undefined;
  prompt: Token[];
}

/** What a finished job's sequence keeps: the whole prompt for the next of `n` choices, else what the request's cache policy says. */
type KeptPart = 'whole prompt' | PromptCachePolicy;

/** Without a policy in the request: the whole conversation, answer included (its start is what other requests share). */
const WHOLE_CONVERSATION: PromptCachePolicy = { implicit: true };

/** Two chats on one context sequence: one as the template wants, one that must begin with a call. */
interface SequenceChats {
  free: LlamaChat;
  mustCall: LlamaChat;
  /** The sequence's id: node-llama-cpp numbers a new context's sequences 0, 1, 2... as they are taken. */
  position: number;
}

/**
 * node-llama-cpp has no "must call" option (tool_choice `required` or one named function): the
 * same template, with the context state saying "enter function calling" before the first token.
 */
function mustCallWrapper(inner: ChatWrapper, callPrefix: LlamaText): ChatWrapper {
  const wrapper = Object.create(inner) as ChatWrapper;
  wrapper.generateContextState = (options) => {
    const { contextText, stopGenerationTriggers } = inner.generateContextState(options);
    return { contextText, stopGenerationTriggers, noPrefixTrigger: { type: 'functionCall', inject: callPrefix } };
  };
  return wrapper;
}

/** The functions the model may call now (none, all, or the one `tool_choice` names), with their argument grammars. */
function callableFunctions(tools: ToolOptions | undefined, toolGrammars: LlamaToolGrammars): ReturnType<LlamaToolGrammars['acquire']> | undefined {
  if (!callsAllowed(tools)) return undefined;
  const { choice } = tools;
  const offered = choice.type === 'function' ? tools.definitions.filter((tool) => tool.name === choice.name) : tools.definitions;
  return toolGrammars.acquire(offered);
}

/**
 * Turns node-llama-cpp's parameter chunks into tool-call parts as they are generated: the first
 * chunk of each call gets an id and the function's name, every chunk the next piece of the
 * arguments. It also keeps the whole calls for the job's result.
 */
class ToolCallStream {
  readonly calls: ToolCall[] = [];
  /**
   * Whitespace at the end of what each call has generated so far, not yet sent: the grammar lets
   * the model pad after the arguments' closing brace, which OpenAI's calls never carry. It is sent
   * when more arguments follow (whitespace inside a string stays), dropped when the call ends.
   */
  private readonly heldWhitespace: string[] = [];

  constructor(private readonly output: OutputSink) {}

  onParamsChunk = ({ callIndex, functionName, paramsChunk }: LlamaChatResponseFunctionCallParamsChunk): void => {
    let call = this.calls[callIndex];
    const opening = call === undefined;
    call ??= this.calls[callIndex] = { id: newToolCallId(), name: functionName, arguments: '' };
    const pending = (this.heldWhitespace[callIndex] ?? '') + paramsChunk;
    const fragment = pending.trimEnd();
    this.heldWhitespace[callIndex] = pending.slice(fragment.length);
    call.arguments += fragment;
    if (!opening && fragment === '') return;
    this.output.write({
      type: 'tool_call',
      choice: 0,
      index: callIndex,
      ...(opening ? { id: call.id, name: call.name } : {}),
      arguments: fragment,
    });
  };
}

/** OpenAI applies no repetition penalty unless asked; node-llama-cpp applies one by default. */
function repeatPenalty(sampling: SamplingParams, maxTokens: number): GenerateOptions['repeatPenalty'] {
  if (sampling.frequencyPenalty === 0 && sampling.presencePenalty === 0) return false;
  return {
    penalty: 1,
    frequencyPenalty: sampling.frequencyPenalty,
    presencePenalty: sampling.presencePenalty,
    lastTokens: maxTokens,
    penalizeNewLine: true,
  };
}

/**
 * llama.cpp through node-llama-cpp: one model, one context with N parallel sequences
 * (continuous batching), one LlamaChat per sequence. When a job ends its sequence keeps the
 * conversation and its answer (or, in explicit mode, the prompt up to its breakpoint), and the next
 * job goes to the sequence that holds the most of its prompt (see llama-prompt-cache.ts).
 */
export class LlamaCppEngine implements InferenceEngine {
  readonly name = 'llama.cpp';
  /** Calls and JSON are enforced by node-llama-cpp's grammars, whatever the model. */
  readonly capabilities: EngineCapabilities;
  /** Sequences not generating, in the order they fell idle. */
  private readonly idleChats: SequenceChats[];
  /** Idle sequences holding the prompt of a running job's next choice (see pickSequence). */
  private readonly keptForNextChoice = new WeakSet<SequenceChats>();
  private readonly grammars: LlamaGrammars;

  private constructor(
    private readonly llama: Llama,
    private readonly model: LlamaModel,
    private readonly context: LlamaContext,
    private readonly chatWrapper: ChatWrapper,
    chats: SequenceChats[],
    private readonly tokenBias: (biases: Array<{ token: number; bias: number }>) => TokenBias,
    private readonly promptCache: boolean,
    private readonly toolGrammars: LlamaToolGrammars,
  ) {
    this.idleChats = [...chats];
    this.slots = chats.length;
    this.grammars = new LlamaGrammars(llama);
    this.capabilities = {
      tools: true,
      grammar: true,
      // The answer is scored again without the thoughts (or comments) before it, as LlamaChat
      // passes only the answer's tokens on: other numbers than it was sampled with. Refused.
      logprobs: chatWrapper.settings.segments?.thought === undefined && chatWrapper.settings.segments?.comment === undefined,
      maxChoices: MAX_CHOICES,
      logitBiasTokens: vocabularySize(model),
      unbiasableTokens: endOfGenerationTokens(model),
    };
  }

  readonly slots: number;

  /** Whether the chat template marks thinking (a thought segment): a reasoning model's. */
  private get thinks(): boolean {
    return this.chatWrapper.settings.segments?.thought !== undefined;
  }

  /** Where a reasoning template's answer begins: after an ended thought (thinking off), in the thought it opens itself, or as LlamaChat decides. */
  private answerStart(thinking: boolean | undefined, mustCall: boolean): AnswerStart | undefined {
    const thought = this.chatWrapper.settings.segments?.thought;
    if (!thought) return undefined;
    if (thinking === false) return 'after thought';
    // A forced call is injected before the first token: LlamaChat decides about the thought itself there.
    if (mustCall) return undefined;
    const { prefix } = thought;
    const openedOnStart = typeof prefix === 'object' && 'type' in prefix && prefix.type === 'openedOnStart';
    return openedOnStart || thought.openOnResponseStart === true ? 'in thought' : undefined;
  }

  get contextSize(): number {
    return this.context.contextSize;
  }

  static async load(options: LlamaCppEngineOptions): Promise<LlamaCppEngine> {
    // node-llama-cpp is ESM-only with top-level await, so it cannot be require()d from CommonJS.
    const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');
    const llama = await getLlama({
      gpu: options.gpu === 'false' ? false : options.gpu,
      build: 'never',
      logLevel: LlamaLogLevel.warn,
      maxThreads: options.threads,
    }).catch((error: unknown) => {
      // An explicit backend that cannot be had is an error at boot, never a silent CPU fallback.
      const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      throw new Error(`GPU=${String(options.gpu)}: no usable llama.cpp build for that backend on this machine (${reason})`);
    });
    // A load that fails lets go of llama.cpp: the thread it ran on ends next, and ending a thread
    // that still holds llama.cpp aborts the process.
    return LlamaCppEngine.loadOnto(llama, options).catch(async (error: unknown) => {
      await llama.dispose();
      throw error;
    });
  }

  /** Loads the model, its context and its chats onto a llama.cpp backend. */
  private static async loadOnto(llama: Llama, options: LlamaCppEngineOptions): Promise<LlamaCppEngine> {
    const { LlamaChat: LlamaChatClass, LlamaText: toLlamaText, TokenBias: TokenBiasClass, resolveChatWrapper } = await import('node-llama-cpp');
    const model = await llama.loadModel({ modelPath: options.modelPath });
    const vram = await llama.getVramState();
    const devices = await llama.getGpuDeviceNames();
    options.log?.(
      `llama.cpp backend ${llama.gpu === false ? 'cpu' : llama.gpu} (GPU=${String(options.gpu)})` +
        (devices.length > 0
          ? `, devices ${devices.join(', ')}, VRAM ${(vram.total / 2 ** 30).toFixed(1)} GiB (${(vram.free / 2 ** 30).toFixed(1)} free)`
          : '') +
        `, ${model.gpuLayers} layers offloaded, ${options.threads} CPU threads`,
    );
    const context = await model.createContext({
      sequences: options.parallelSequences,
      contextSize: Math.min(options.contextSize, model.trainContextSize),
      threads: { ideal: options.threads, min: options.threads },
    });
    // Resolving the chat template costs ~0.5 s: do it once per model, not once per job.
    // Tools go to LlamaChat with stand-ins for their schemas; the prompt shows the schemas as sent.
    const toolGrammars = LlamaToolGrammars.install(llama);
    const chatWrapper = toolGrammars.showingSchemas(resolveChatWrapper(model));
    const forcedWrapper = mustCallWrapper(chatWrapper, toLlamaText(chatWrapper.settings.functions.call.prefix));
    const chats = Array.from({ length: options.parallelSequences }, (_, position): SequenceChats => {
      const contextSequence = context.getSequence();
      return {
        position,
        free: new LlamaChatClass({ contextSequence, chatWrapper, autoDisposeSequence: false }),
        mustCall: new LlamaChatClass({ contextSequence, chatWrapper: forcedWrapper, autoDisposeSequence: false }),
      };
    });
    const sequences = chats.map(({ free }) => free.sequence);
    if (!shareDecodeSteps(context, sequences)) {
      options.log?.('node-llama-cpp changed inside: answers generating at once may take more passes, or wait to start, than they need');
    }
    // OpenAI adds logit_bias to the logits, and -100 bans the token. (node-llama-cpp's TokenBias
    // skips end-of-generation tokens without a word: the capabilities announce them as unbiasable.)
    const tokenBias = (biases: Array<{ token: number; bias: number }>): TokenBias => {
      const bias = new TokenBiasClass(model.tokenizer);
      for (const { token, bias: logit } of biases) bias.set(token as Token, logit <= -100 ? 'never' : { logit });
      return bias;
    };
    return new LlamaCppEngine(llama, model, context, chatWrapper, chats, tokenBias, options.promptCache ?? true, toolGrammars);
  }

  async generate(request: GenerationRequest): Promise<GenerationOutcome> {
    const calls = callableFunctions(request.tools, this.toolGrammars);
    try {
      return await this.generateWith(request, calls?.functions);
    } finally {
      calls?.release();
    }
  }

  private async generateWith(request: GenerationRequest, functions: ChatModelFunctions | undefined): Promise<GenerationOutcome> {
    const { sampling, tools, responseFormat, logprobs, thinking, signal, output, anotherChoiceFollows } = request;
    const mustCall = functions !== undefined && tools?.choice.type !== 'auto';
    const answerStart = this.answerStart(thinking, mustCall);
    const { messages, promptCache, history, prompt } = this.fittedPrompt(request, answerStart, functions);
    const promptTokens = prompt.length;
    // LlamaChat keeps a token free after the prompt: with only one it would silently drop the
    // start of the conversation to make room (its context shift), so that prompt is refused.
    const maxTokens = answerBudget(this.contextSize, promptTokens, sampling.maxTokens, LLAMA_CHAT_MINIMUM_ROOM);

    const grammar = await this.grammars.forFormat(responseFormat);
    // Stop sequences are matched here, not by node-llama-cpp: it drops the text it holds back for
    // a possible stop sequence when max_tokens ends the answer (as it still drops text it holds
    // for its own reasons: part of a character, of a template's end marker). Matching one aborts
    // generation.
    const stopped = new AbortController();
    // With logprobs the text waits for its scoring pass and goes out piece by piece with its tokens' numbers.
    const stop = new StopSequences(sampling.stop, logprobs ? () => undefined : (text) => output.write({ type: 'text', choice: 0, text }));
    const toolCalls = new ToolCallStream(output);
    // No text follows a call: what was held back for a stop sequence goes out before the call's deltas.
    const onCallChunk: GenerateOptions['onFunctionCallParamsChunk'] = (chunk) => {
      if (signal.aborted) return; // as for text: a chunk after the abort is nobody's
      stop.release();
      toolCalls.onParamsChunk(chunk);
    };
    const constraint: Partial<GenerateOptions> = grammar
      ? { grammar }
      : functions && tools
        ? { functions, maxParallelFunctionCalls: parallelCallsAllowed(tools) ? MAX_PARALLEL_CALLS : 1, onFunctionCallParamsChunk: onCallChunk }
        : {};

    const bias = sampling.logitBias?.length ? this.tokenBias(sampling.logitBias) : undefined;

    if (this.idleChats.length === 0) throw new Error('no free sequence: more jobs running than the engine has slots');
    const neighbours = busyNeighbours(
      this.idleChats.map(({ position }) => position),
      this.slots,
    );
    const idle = this.idleChats.map((chats, at) => ({
      contextTokens: chats.free.sequence.contextTokens,
      reserved: this.keptForNextChoice.has(chats),
      busyNeighbours: neighbours[at],
    }));
    const { index, cachedTokens } = pickSequence(idle, prompt);
    const [chats] = this.idleChats.splice(index, 1);
    const chat = mustCall ? chats.mustCall : chats.free;
    const meterBefore = chat.sequence.tokenMeter.getState();
    const answerTokens = logprobs ? new AnswerTokens() : undefined;
    let reasoningTokens = 0;
    // Thinking (a thought segment of the template) is passed on as reasoning; the answer's text comes through onTextChunk.
    const onResponseChunk: GenerateOptions['onResponseChunk'] = (chunk) => {
      if (chunk.type !== 'segment' || chunk.segmentType !== 'thought' || signal.aborted) return;
      reasoningTokens += chunk.tokens.length;
      output.write({ type: 'reasoning', choice: 0, text: chunk.text });
    };
    let failed = false;
    try {
      const response = await chat.generateResponse(history, {
        ...(constraint as object),
        signal: AbortSignal.any([signal, stopped.signal]),
        stopOnAbortSignal: true,
        maxTokens,
        temperature: sampling.temperature,
        topP: sampling.topP,
        // OpenAI samples from the whole distribution; node-llama-cpp would otherwise keep the top 40.
        topK: 0,
        seed: sampling.seed,
        repeatPenalty: repeatPenalty(sampling, maxTokens),
        ...(bias ? { tokenBias: bias } : {}),
        trimWhitespaceSuffix: false,
        ...(this.thinks ? { onResponseChunk } : {}),
        onTextChunk: (text) => {
          answerTokens?.onText(text);
          // After an abort node-llama-cpp may still hand on the token it was processing.
          if (!signal.aborted && !stop.push(text)) stopped.abort();
        },
        ...(answerTokens ? { onToken: (tokens: Token[]) => answerTokens.onToken(tokens) } : {}),
      });
      if (signal.aborted) throw new GenerationAbortedError();
      // LlamaChat dropped the start of the conversation to finish the answer: never answer from part of the prompt.
      if (response.lastEvaluation.contextShiftMetadata != null) throw answerOutgrewContext(this.contextSize, promptTokens);
      const text = stop.finish();
      // Read before scoring: the scoring pass evaluates the answer again on the same sequence.
      const completionTokens = chat.sequence.tokenMeter.diff(meterBefore).usedOutputTokens;
      if (logprobs && answerTokens) {
        const scored = await scoreAnswer(chat.sequence, this.model, prompt, answerTokens.tokens, logprobs.top);
        // A cancel or timeout during the scoring pass ends the job as cancelled, not answered.
        if (signal.aborted) throw new GenerationAbortedError();
        const kept = stop.stopped ? answerTokens.within(text.length) : scored.length;
        // Each piece of text followed by its tokens' log probabilities: a stream's chunk carries both.
        for (const {
          text: [from, to],
          tokens: [first, last],
        } of answerTokens.pieces(text.length, kept)) {
          output.write({ type: 'text', choice: 0, text: text.slice(from, to) });
          if (last > first) output.write({ type: 'logprobs', choice: 0, content: scored.slice(first, last) });
        }
      }
      const called = toolCalls.calls.length > 0;
      const finishReason: FinishReason = !stop.stopped && response.metadata.stopReason === 'maxTokens' ? 'length' : called ? 'tool_calls' : 'stop';
      return {
        text,
        ...(called ? { toolCalls: toolCalls.calls } : {}),
        finishReason,
        usage: {
          prompt_tokens: promptTokens,
          completion_tokens: completionTokens,
          total_tokens: promptTokens + completionTokens,
          prompt_tokens_details: { cached_tokens: cachedTokens },
          ...(this.thinks ? { completion_tokens_details: { reasoning_tokens: reasoningTokens } } : {}),
        },
      };
    } catch (error) {
      failed = true; // so the job ends here, and no other choice follows
      if (signal.aborted) throw new GenerationAbortedError();
      if (isContextOverflow(error)) throw answerOutgrewContext(this.contextSize, promptTokens);
      throw error;
    } finally {
      // Erase what is not kept now (explicit mode), while the context's batch loop is ours for a
      // moment: a job that arrives later (from the queue, not in this same turn of the event loop)
      // would otherwise wait tens of milliseconds for node-llama-cpp to let it erase the old state itself.
      const keep: KeptPart = anotherChoiceFollows === true && !failed ? 'whole prompt' : (promptCache ?? WHOLE_CONVERSATION);
      await this.keepReusableStart(chat.sequence, { messages, history, functions, prompt }, keep).catch(() => undefined);
      // Between choices the job still holds its slot, so another sequence is idle for other jobs.
      if (keep === 'whole prompt') this.keptForNextChoice.add(chats);
      else this.keptForNextChoice.delete(chats);
      this.idleChats.push(chats);
    }
  }

  /**
   * The conversation to answer, rendered: the request's, or with `truncation: "auto"` and a prompt
   * that does not fit, the one with the fewest oldest messages dropped that does (its cache
   * breakpoint moved with it). When none fits, the whole one goes on to be refused as too long.
   */
  private fittedPrompt(
    { messages, sampling, truncation, promptCache }: GenerationRequest,
    answerStart: AnswerStart | undefined,
    functions: ChatModelFunctions | undefined,
  ): Omit<RenderedPrompt, 'functions'> & { promptCache: PromptCachePolicy | undefined } {
    const renderings = new Map<ChatMessage[], { history: ChatHistoryItem[]; prompt: Token[] }>();
    const render = (candidate: ChatMessage[]): { history: ChatHistoryItem[]; prompt: Token[] } => {
      const history = toChatHistory(candidate, answerStart);
      const rendering = { history, prompt: this.renderPrompt(history, functions) };
      renderings.set(candidate, rendering);
      return rendering;
    };
    if (truncation !== 'auto') return { messages, promptCache, ...render(messages) };
    const fits = (candidate: ChatMessage[]): boolean => {
      try {
        answerBudget(this.contextSize, render(candidate).prompt.length, sampling.maxTokens, LLAMA_CHAT_MINIMUM_ROOM);
        return true;
      } catch (error) {
        if (error instanceof ContextLengthExceededError) return false;
        throw error;
      }
    };
    const fitted = fitConversation(messages, fits) ?? { messages, from: 0, dropped: 0 };
    return {
      messages: fitted.messages,
      promptCache: truncatedCachePolicy(promptCache, fitted),
      ...(renderings.get(fitted.messages) ?? render(fitted.messages)),
    };
  }

  /** Erases all of a finished job's sequence but the start of its prompt that later prompts may reuse. */
  private async keepReusableStart(sequence: LlamaContextSequence, rendered: RenderedPrompt, keep: KeptPart): Promise<void> {
    const start = this.keptLength(sequence, rendered, keep);
    // node-llama-cpp takes the context's lock even to erase nothing.
    if (start >= sequence.nextTokenIndex) return;
    await sequence.eraseContextTokenRanges([{ start, end: sequence.nextTokenIndex }]);
  }

  /**
   * How much of a finished prompt its sequence keeps: what `keep` asks for, and never more than
   * the sequence holds (an aborted job may not have evaluated it all). None with PROMPT_CACHE off,
   * or for a model whose state cannot be cut short (sliding-window attention, recurrent:
   * node-llama-cpp would evaluate the kept part again there and then, for a job that may never come).
   */
  private keptLength(sequence: LlamaContextSequence, { messages, functions, prompt }: RenderedPrompt, keep: KeptPart): number {
    if (!this.promptCache || sequence.needsCheckpoints) return 0;
    const held = commonPrefixLength(sequence.contextTokens, prompt);
    // LlamaChat evaluates the prompt's last token itself, for the first answer token's probabilities.
    if (keep === 'whole prompt') return Math.min(held, prompt.length - 1);
    // The conversation, answer included, as llama.cpp's server keeps a slot: the next turn begins with it.
    if (keep.implicit) return sequence.nextTokenIndex;
    let wanted = 0;
    const marked = keep.breakpoint ? messages.at(keep.breakpoint.message) : undefined;
    // The conversation is rendered again only when the sequence holds more than is kept already.
    if (keep.breakpoint && marked && held > wanted) {
      const cut = [...messages.slice(0, keep.breakpoint.message), { ...marked, content: marked.content.slice(0, keep.breakpoint.offset) }];
      wanted = Math.max(wanted, this.startOf(prompt, toChatHistory(cut), functions));
    }
    return Math.min(wanted, held);
  }

  /** How much of `prompt` a rendering of the first part of its history begins it with (see sharedStart). */
  private startOf(prompt: Token[], firstPart: ChatHistoryItem[], functions: ChatModelFunctions | undefined): number {
    try {
      return sharedStart(prompt, this.renderPrompt(firstPart, functions));
    } catch {
      return 0; // a template that cannot render that part alone (one that wants a user message)
    }
  }

  /** The prompt exactly as the chat template renders it, in the model's tokens. */
  private renderPrompt(history: ChatHistoryItem[], availableFunctions: ChatModelFunctions | undefined): Token[] {
    const { contextText } = this.chatWrapper.generateContextState({ chatHistory: history, availableFunctions });
    return contextText.tokenize(this.model.tokenizer);
  }

  async close(): Promise<void> {
    await this.context.dispose();
    await this.model.dispose();
    await this.llama.dispose();
  }
}
