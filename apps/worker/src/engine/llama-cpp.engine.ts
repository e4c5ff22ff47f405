import type { ChatMessage, FinishReason, SamplingParams } from '@app/contracts';
import type {
  ChatHistoryItem,
  ChatWrapper,
  LLamaChatGenerateResponseOptions,
  Llama,
  LlamaChat,
  LlamaContext,
  LlamaModel,
} from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import { ContextLengthExceededError, GenerationAbortedError } from './inference-engine';
import type { GenerationOutcome, GenerationRequest, InferenceEngine } from './inference-engine';

export interface LlamaCppEngineOptions {
  modelPath: string;
  parallelSequences: number;
  threads: number;
  contextSize: number;
  gpu: 'auto' | 'cuda' | 'vulkan' | 'metal' | false;
}

type GenerateOptions = LLamaChatGenerateResponseOptions;

function toChatHistory(messages: ChatMessage[]): ChatHistoryItem[] {
  const history: ChatHistoryItem[] = messages.map((message): ChatHistoryItem => {
    if (message.role === 'assistant') return { type: 'model', response: [message.content] };
    return { type: message.role, text: message.content };
  });
  // An empty model turn at the end is the answer the engine fills in.
  history.push({ type: 'model', response: [] });
  return history;
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
 * (continuous batching), one LlamaChat per sequence so a sequence keeps its evaluated prefix
 * for the next job that shares it.
 */
export class LlamaCppEngine implements InferenceEngine {
  private readonly idleChats: LlamaChat[];

  private constructor(
    private readonly llama: Llama,
    private readonly model: LlamaModel,
    private readonly context: LlamaContext,
    private readonly chatWrapper: ChatWrapper,
    chats: LlamaChat[],
  ) {
    this.idleChats = [...chats];
    this.slots = chats.length;
  }

  readonly slots: number;

  get contextSize(): number {
    return this.context.contextSize;
  }

  static async load(options: LlamaCppEngineOptions): Promise<LlamaCppEngine> {
    // node-llama-cpp is ESM-only with top-level await, so it cannot be require()d from CommonJS.
    const { getLlama, LlamaChat: LlamaChatClass, LlamaLogLevel, resolveChatWrapper } = await import('node-llama-cpp');
    const llama = await getLlama({
      gpu: options.gpu,
      build: 'never',
      logLevel: LlamaLogLevel.warn,
      maxThreads: options.threads,
    });
    const model = await llama.loadModel({ modelPath: options.modelPath });
    const context = await model.createContext({
      sequences: options.parallelSequences,
      contextSize: Math.min(options.contextSize, model.trainContextSize),
      threads: { ideal: options.threads, min: options.threads },
    });
    // Resolving the chat template costs ~0.5 s: do it once per model, not once per job.
    const chatWrapper = resolveChatWrapper(model);
    const chats = Array.from(
      { length: options.parallelSequences },
      () => new LlamaChatClass({ contextSequence: context.getSequence(), chatWrapper }),
    );
    return new LlamaCppEngine(llama, model, context, chatWrapper, chats);
  }

  async generate({ messages, sampling, signal, onText }: GenerationRequest): Promise<GenerationOutcome> {
    const history = toChatHistory(messages);
    const promptTokens = this.countPromptTokens(history);
    const room = this.contextSize - promptTokens;
    if (room <= 0 || (sampling.maxTokens ?? 0) > room) {
      throw new ContextLengthExceededError(this.contextSize, promptTokens, sampling.maxTokens);
    }
    // Without max_tokens the answer may use the rest of the context (finish_reason "length").
    const maxTokens = sampling.maxTokens ?? room;

    const chat = this.idleChats.pop();
    if (!chat) throw new Error('no free sequence: more jobs running than the engine has slots');
    const meterBefore = chat.sequence.tokenMeter.getState();
    try {
      const response = await chat.generateResponse(history, {
        signal,
        maxTokens,
        temperature: sampling.temperature,
        topP: sampling.topP,
        // OpenAI samples from the whole distribution; node-llama-cpp would otherwise keep the top 40.
        topK: 0,
        seed: sampling.seed,
        repeatPenalty: repeatPenalty(sampling, maxTokens),
        customStopTriggers: sampling.stop,
        trimWhitespaceSuffix: false,
        onTextChunk: onText,
      });
      const completionTokens = chat.sequence.tokenMeter.diff(meterBefore).usedOutputTokens;
      const finishReason: FinishReason = response.metadata.stopReason === 'maxTokens' ? 'length' : 'stop';
      return {
        text: response.response,
        finishReason,
        usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
      };
    } catch (error) {
      if (signal.aborted) throw new GenerationAbortedError();
      throw error;
    } finally {
      // Erase the answer now, while the context's batch loop is ours for a moment: a job that
      // arrives later (from the queue, not in this same turn of the event loop) would otherwise
      // wait tens of milliseconds for node-llama-cpp to let it erase the old state itself.
      await chat.sequence.clearHistory().catch(() => undefined);
      this.idleChats.push(chat);
    }
  }

  /** Tokens of the prompt exactly as the chat template renders it, counted by the model's tokenizer. */
  private countPromptTokens(history: ChatHistoryItem[]): number {
    const { contextText } = this.chatWrapper.generateContextState({ chatHistory: history });
    return contextText.tokenize(this.model.tokenizer).length;
  }

  async close(): Promise<void> {
    await this.context.dispose();
    await this.model.dispose();
    await this.llama.dispose();
  }
}
