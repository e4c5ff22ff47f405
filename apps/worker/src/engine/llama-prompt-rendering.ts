import type { ChatMessage, PromptCachePolicy } from '@app/contracts';
import type { ChatHistoryItem, ChatModelFunctions, ChatWrapper, LlamaModel, Token } from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import { answerBudget, ContextLengthExceededError } from './inference-engine';
import type { GenerationRequest } from './inference-engine';
import { fitConversation, truncatedCachePolicy } from './conversation-truncation';
import { toChatHistory } from './llama-chat-history';
import type { AnswerStart } from './llama-chat-history';
import { LLAMA_CHAT_MINIMUM_ROOM } from './llama-context-overflow';
import { sharedStart } from './llama-prompt-cache';

/** A job's prompt, as it came and as the engine rendered it. */
export interface RenderedPrompt {
  messages: ChatMessage[];
  history: ChatHistoryItem[];
  functions: ChatModelFunctions | undefined;
  prompt: Token[];
}

/**
 * A job's conversation as the model's chat template renders it, in the model's tokens: LlamaChat
 * evaluates the same rendering, so the prompt's length and its shared starts are known before it runs.
 */
export class LlamaPromptRenderer {
  constructor(
    private readonly chatWrapper: ChatWrapper,
    private readonly model: LlamaModel,
    private readonly contextSize: number,
  ) {}

  /** Where a reasoning template's answer begins: after an ended thought (thinking off), in the thought it opens itself, or as LlamaChat decides. */
  answerStart(thinking: boolean | undefined, mustCall: boolean): AnswerStart | undefined {
    const thought = this.chatWrapper.settings.segments?.thought;
    if (!thought) return undefined;
    if (thinking === false) return 'after thought';
    // A forced call is injected before the first token: LlamaChat decides about the thought itself there.
    if (mustCall) return undefined;
    const { prefix } = thought;
    const openedOnStart = typeof prefix === 'object' && 'type' in prefix && prefix.type === 'openedOnStart';
    return openedOnStart || thought.openOnResponseStart === true ? 'in thought' : undefined;
  }

  /**
   * The conversation to answer, rendered: the request's, or with `truncation: "auto"` and a prompt
   * that does not fit, the one with the fewest oldest messages dropped that does (its cache
   * breakpoint moved with it). When none fits, the whole one goes on to be refused as too long.
   */
  fittedPrompt(
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

  /**
   * The tokens a generate job of this conversation would evaluate as its prompt (a token count):
   * the chat template's rendering with its tools, up to where the answer starts.
   */
  conversationPrompt(
    conversation: Pick<GenerationRequest, 'messages' | 'truncation' | 'promptCache'>,
    answerStart: AnswerStart | undefined,
    functions: ChatModelFunctions | undefined,
  ): Token[] {
    const sampling = { temperature: 1, topP: 1, stop: [], frequencyPenalty: 0, presencePenalty: 0, seed: 0 };
    const job = { ...conversation, sampling, signal: AbortSignal.abort(), output: { write: () => undefined } };
    return this.fittedPrompt(job, answerStart, functions).prompt;
  }

  /** How much of `prompt` a rendering of the first part of its history begins it with (see sharedStart). */
  startOf(prompt: Token[], firstPart: ChatHistoryItem[], functions: ChatModelFunctions | undefined): number {
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
}
