import type { EngineCapabilities } from '@app/contracts';
import type { Llama, LlamaModel } from 'node-llama-cpp' with { 'resolution-mode': 'import' };
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
import { LlamaChatGenerator } from './llama-chat-generator';
import type { LlamaEmbedder } from './llama-embeddings';
import type { LlamaRanker } from './llama-ranking';
import { loadLlama } from './llama-loading';
import { vocabularyTokens } from './llama-prompt-completion';
import type { LlamaCppEngineOptions, LoadedLlama } from './llama-loading';
import { noGenerationCapabilities } from './llama-sampling';

// Kept reachable from here: the engine's module is where callers and tests have always found them.
export { isContextOverflow } from './llama-context-overflow';
export type { LlamaCppEngineOptions } from './llama-loading';

/**
 * llama.cpp through node-llama-cpp: one model, and what serves each kind of job it runs. A
 * generative model answers chats (LlamaChatGenerator: N parallel sequences, continuous batching,
 * a prompt cache) and, with EMBEDDINGS, embeds too; an embedding model (a pooling type in its
 * GGUF) only embeds (LlamaEmbedder), a reranker only ranks (LlamaRanker), and no chat context is
 * made for either.
 */
export class LlamaCppEngine implements InferenceEngine {
  readonly name = 'llama.cpp';
  readonly capabilities: EngineCapabilities;
  readonly slots: number;
  readonly contextSize: number;
  private readonly llama: Llama;
  private readonly model: LlamaModel;
  private readonly generator: LlamaChatGenerator | undefined;
  private readonly embedder: LlamaEmbedder | undefined;
  private readonly ranker: LlamaRanker | undefined;

  private constructor({ llama, model, kinds, chat, embedder, ranker }: LoadedLlama, options: LlamaCppEngineOptions) {
    this.llama = llama;
    this.model = model;
    this.generator = chat ? new LlamaChatGenerator(llama, model, chat, options.promptCache ?? true) : undefined;
    this.embedder = embedder;
    this.ranker = ranker;
    const generation = this.generator?.capabilities ?? noGenerationCapabilities(model);
    // Every model has its tokenizer.
    this.capabilities = { kinds: [...kinds, 'tokenize'], ...generation };
    this.slots = this.generator?.slots ?? options.parallelSequences;
    this.contextSize = this.generator?.contextSize ?? embedder?.contextSize ?? ranker?.contextSize ?? options.contextSize;
  }

  static async load(options: LlamaCppEngineOptions): Promise<LlamaCppEngine> {
    return loadLlama(options, (loaded) => new LlamaCppEngine(loaded, options));
  }

  /** Called only for the kinds announced: a generative model's. */
  generate(request: GenerationRequest): Promise<GenerationOutcome> {
    if (!this.generator) return Promise.reject(new Error('this model does not generate'));
    return this.generator.generate(request);
  }

  /** Called only for the kinds announced: an embedding model's, or with EMBEDDINGS. */
  embed(request: EmbeddingRequest): Promise<EmbeddingOutcome> {
    if (!this.embedder) return Promise.reject(new Error('this model was loaded without embeddings'));
    return this.embedder.embed(request);
  }

  /** Called only for the kinds announced: a reranker's. */
  rank(request: RankRequest): Promise<RankOutcome> {
    if (!this.ranker) return Promise.reject(new Error('this model does not rank'));
    return this.ranker.rank(request);
  }

  /** The model's tokenizer; a conversation as the chat generator renders it (a model that only embeds renders none). */
  async tokenize(request: TokenizeRequest): Promise<TokenizeOutcome> {
    await Promise.resolve(); // a job, like the others: it never runs inside its caller's turn
    const generator = this.generator;
    return vocabularyTokens(this.model, request, this.name, generator && ((conversation) => generator.promptTokens(conversation)));
  }

  async close(): Promise<void> {
    await this.embedder?.close();
    await this.ranker?.close();
    await this.generator?.close();
    await this.model.dispose();
    await this.llama.dispose();
  }
}
