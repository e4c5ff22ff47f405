import { encodeVector } from '@app/contracts';
import type { EmbeddingInput } from '@app/contracts';
import type { LlamaEmbeddingContext, LlamaModel, Token } from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import { GenerationAbortedError, inputTooLong } from './inference-engine';
import { LlamaContextPool } from './llama-context-pool';
import type { ContextPoolOptions } from './llama-context-pool';
import type { EmbeddingOutcome, EmbeddingRequest } from './inference-engine';

/** GGUF's pooling types (llama.cpp's `llama_pooling_type`): what makes a model an embedding model, or a reranker. */
const POOLING_NONE = 0;
export const POOLING_MEAN = 1;
export const POOLING_CLS = 2;
export const POOLING_RANK = 4;

/** The pooling type the model's file names, if any. */
export function poolingOf(model: LlamaModel): number | undefined {
  const { metadata } = model.fileInfo;
  const architecture = metadata.general.architecture;
  return (metadata[architecture as keyof typeof metadata] as { pooling_type?: number } | undefined)?.pooling_type;
}

/**
 * An input to embed as tokens: text tokenized as the model's tokenizer does with special tokens as
 * text; token ids taken as they are, copied (node-llama-cpp adds the start and end tokens to the
 * array it is given).
 */
export function embeddingInputTokens(model: LlamaModel, input: EmbeddingInput): Token[] {
  return typeof input === 'string' ? model.tokenize(input) : ([...input] as Token[]);
}

/** Whether the model's file names a pooling type that gives one vector per input (mean, CLS, last token). */
export function isEmbeddingModel(model: LlamaModel): boolean {
  const pooling = poolingOf(model);
  return pooling !== undefined && pooling > POOLING_NONE && pooling < POOLING_RANK;
}

/**
 * Embeds with a pool of node-llama-cpp embedding contexts, each input of each job in the pool's
 * one line. Vectors go out as they are made, raw: the door normalises them.
 */
export class LlamaEmbedder {
  private constructor(
    private readonly model: LlamaModel,
    private readonly pool: LlamaContextPool<LlamaEmbeddingContext>,
    readonly contextSize: number,
  ) {}

  static async create(model: LlamaModel, options: ContextPoolOptions): Promise<LlamaEmbedder> {
    const contextSize = Math.min(options.contextSize, model.trainContextSize);
    // A non-causal model (BERT-like) evaluates an input in one batch: the batch holds the longest.
    const pool = await LlamaContextPool.create(options.contexts, () =>
      model.createEmbeddingContext({ contextSize, batchSize: contextSize, threads: options.threads }),
    );
    return new LlamaEmbedder(model, pool, contextSize);
  }

  /** Every input is measured first: one that cannot fit fails the job before any is evaluated. */
  async embed({ inputs, signal, output }: EmbeddingRequest): Promise<EmbeddingOutcome> {
    const tokens = inputs.map((input) => embeddingInputTokens(this.model, input));
    // With the start and end tokens the model's tokenizer adds (any context measures alike).
    const lengths = tokens.map((input) => this.pool.contexts[0].calculateInputLength(input));
    const longest = Math.max(...lengths);
    // node-llama-cpp keeps one position free after the input.
    if (longest >= this.contextSize) throw inputTooLong(this.contextSize, longest);
    await Promise.all(
      tokens.map((input, index) =>
        this.pool.run(async (context) => {
          if (signal.aborted) return;
          const { vector } = await context.getEmbeddingFor(input);
          if (!signal.aborted) output.write({ type: 'embedding', index, vector: encodeVector(vector) });
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
