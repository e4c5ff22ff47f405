import type { LlamaModel, LlamaRankingContext, Token } from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import { GenerationAbortedError, inputTooLong } from './inference-engine';
import type { RankOutcome, RankRequest } from './inference-engine';
import { LlamaContextPool } from './llama-context-pool';
import type { ContextPoolOptions } from './llama-context-pool';
import { poolingOf, POOLING_RANK } from './llama-embeddings';

/** Whether the model is a reranker: rank pooling, and a classifier head llama.cpp reads (node-llama-cpp checks the file). */
export function isRankingModel(model: LlamaModel): boolean {
  return poolingOf(model) === POOLING_RANK && model.fileInsights.supportsRanking;
}

/**
 * Scores documents against a query with a pool of node-llama-cpp ranking contexts: each document
 * is evaluated after the query (the model's rerank template, or its separator tokens) on the next
 * free context, and its score goes out as it is made.
 */
export class LlamaRanker {
  private constructor(
    private readonly model: LlamaModel,
    private readonly pool: LlamaContextPool<LlamaRankingContext>,
    readonly contextSize: number,
  ) {}

  static async create(model: LlamaModel, options: ContextPoolOptions): Promise<LlamaRanker> {
    const contextSize = Math.min(options.contextSize, model.trainContextSize);
    const pool = await LlamaContextPool.create(options.contexts, () =>
      model.createRankingContext({ contextSize, batchSize: contextSize, threads: options.threads }),
    );
    return new LlamaRanker(model, pool, contextSize);
  }

  /** Every pair is measured first: a document that cannot fit with the query fails the job before any is scored. */
  async rank({ query, documents, signal, output }: RankRequest): Promise<RankOutcome> {
    // As node-llama-cpp's ranking context tokenizes text: special tokens as text (the template adds
    // its own), a leading space trimmed. Tokenized once here, the query serves every document.
    const tokenize = (text: string): Token[] => this.model.tokenize(text, false, 'trimLeadingSpace');
    const queryTokens = tokenize(query);
    const documentTokens = documents.map(tokenize);
    const lengths = documentTokens.map((tokens) => this.pool.contexts[0].calculateInputLength(queryTokens, tokens));
    const longest = Math.max(...lengths);
    // node-llama-cpp keeps one position free after the input.
    if (longest >= this.contextSize) throw inputTooLong(this.contextSize, longest);
    await Promise.all(
      documentTokens.map((tokens, index) =>
        this.pool.run(async (context) => {
          if (signal.aborted) return;
          const score = await context.rank(queryTokens, tokens);
          if (!signal.aborted) output.write({ type: 'score', index, score });
        }),
      ),
    );
    if (signal.aborted) throw new GenerationAbortedError();
    return { promptTokens: lengths.reduce((sum, length) => sum + length, 0) };
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
