import { MAX_CHOICES, parallelCallsAllowed } from '@app/contracts';
import type { EngineCapabilities, FinishReason } from '@app/contracts';
import type { ChatModelFunctions, ChatWrapper, LLamaChatGenerateResponseOptions, Llama, LlamaContext, LlamaModel, Token } from 'node-llama-cpp' with {
  'resolution-mode': 'import',
};
import { answerBudget, GenerationAbortedError } from './inference-engine';
import type { GenerationOutcome, GenerationRequest } from './inference-engine';
import { answerOutgrewContext, isContextOverflow, LLAMA_CHAT_MINIMUM_ROOM } from './llama-context-overflow';
import type { LoadedChat } from './llama-loading';
import { AnswerTokens, scoreAnswer } from './llama-logprobs';
import { LlamaGrammars } from './llama-grammars';
import { LlamaPromptCompleter } from './llama-prompt-completion';
import { LlamaPromptRenderer } from './llama-prompt-rendering';
import { endOfGenerationTokens, samplingOptions, vocabularySize } from './llama-sampling';
import type { LogitBias } from './llama-sampling';
import { LlamaSequences, WHOLE_CONVERSATION } from './llama-sequences';
import type { KeptPart } from './llama-sequences';
import { callableFunctions, MAX_PARALLEL_CALLS, ToolCallStream } from './llama-tool-calls';
import type { LlamaToolGrammars } from './llama-tool-grammars';
import { StopSequences } from './stop-sequences';

type GenerateOptions = LLamaChatGenerateResponseOptions;

/** What a generating model can honour beyond plain sampling (the engine adds the kinds it runs). */
export type GenerationCapabilities = Omit<EngineCapabilities, 'kinds'>;

/**
 * The llama engine's chat answers: one context with N parallel sequences (continuous batching),
 * one LlamaChat per sequence. When a job ends its sequence keeps the conversation and its answer
 * (or, in explicit mode, the prompt up to its breakpoint), and the next job goes to the sequence
 * that holds the most of its prompt (see llama-prompt-cache.ts).
 */
export class LlamaChatGenerator {
  /** Calls and JSON are enforced by node-llama-cpp's grammars, whatever the model. */
  readonly capabilities: GenerationCapabilities;
  readonly slots: number;
  private readonly model: LlamaModel;
  private readonly context: LlamaContext;
  private readonly chatWrapper: ChatWrapper;
  private readonly tokenBias: LogitBias;
  private readonly toolGrammars: LlamaToolGrammars;
  private readonly grammars: LlamaGrammars;
  private readonly prompts: LlamaPromptRenderer;
  private readonly sequences: LlamaSequences;
  private readonly plainPrompts: LlamaPromptCompleter;

  constructor(llama: Llama, model: LlamaModel, { context, chatWrapper, chats, tokenBias, toolGrammars, newCompletion }: LoadedChat, promptCache: boolean) {
    this.model = model;
    this.context = context;
    this.chatWrapper = chatWrapper;
    this.tokenBias = tokenBias;
    this.toolGrammars = toolGrammars;
    this.prompts = new LlamaPromptRenderer(chatWrapper, model, context.contextSize);
    this.sequences = new LlamaSequences(chats, promptCache, this.prompts);
    this.plainPrompts = new LlamaPromptCompleter(model, this.sequences, tokenBias, context.contextSize, newCompletion);
    this.slots = chats.length;
    this.grammars = new LlamaGrammars(llama);
    this.capabilities = {
      tools: true,
      grammar: true,
      // The answer is scored again without the thoughts (or comments) before it, as LlamaChat
      // passes only the answer's tokens on: other numbers than it was sampled with. Refused.
      logprobs: chatWrapper.settings.segments?.thought === undefined && chatWrapper.settings.segments?.comment === undefined,
      maxChoices: MAX_CHOICES,
      plainPrompts: true,
      fillInTheMiddle: model.tokens.infill.prefix !== null && model.tokens.infill.suffix !== null,
      promptLogprobs: true,
      logitBiasTokens: vocabularySize(model),
      unbiasableTokens: endOfGenerationTokens(model),
    };
  }

  /** Whether the chat template marks thinking (a thought segment): a reasoning model's. */
  private get thinks(): boolean {
    return this.chatWrapper.settings.segments?.thought !== undefined;
  }

  get contextSize(): number {
    return this.context.contextSize;
  }

  async generate(request: GenerationRequest): Promise<GenerationOutcome> {
    if (request.prompt) return this.plainPrompts.complete(request);
    const calls = callableFunctions(request.tools, this.toolGrammars);
    try {
      return await this.generateWith(request, calls?.functions);
    } finally {
      calls?.release();
    }
  }

  /**
   * The tokens a generate job of this conversation would evaluate as its prompt: the chat
   * template's rendering with its tools, up to where the answer starts.
   */
  promptTokens(conversation: Pick<GenerationRequest, 'messages' | 'tools' | 'thinking'>): Token[] {
    const calls = callableFunctions(conversation.tools, this.toolGrammars);
    try {
      const mustCall = calls !== undefined && conversation.tools?.choice.type !== 'auto';
      const answerStart = this.prompts.answerStart(conversation.thinking, mustCall);
      return this.prompts.conversationPrompt(conversation, answerStart, calls?.functions);
    } finally {
      calls?.release();
    }
  }

  private async generateWith(request: GenerationRequest, functions: ChatModelFunctions | undefined): Promise<GenerationOutcome> {
    const { sampling, tools, responseFormat, logprobs, thinking, signal, output, anotherChoiceFollows } = request;
    const mustCall = functions !== undefined && tools?.choice.type !== 'auto';
    const answerStart = this.prompts.answerStart(thinking, mustCall);
    const { messages, promptCache, history, prompt } = this.prompts.fittedPrompt(request, answerStart, functions);
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

    const { chats, cachedTokens } = this.sequences.take(prompt);
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
        ...samplingOptions(sampling, maxTokens, bias),
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
      await this.sequences.giveBack(chats, { messages, history, functions, prompt }, keep);
    }
  }

  async close(): Promise<void> {
    await this.context.dispose();
  }
}
