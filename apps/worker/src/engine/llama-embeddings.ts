import { encodeVector } from '@app/contracts';
import type { EmbeddingInput } from '@app/contracts';
import type { LlamaEmbeddingContext, LlamaModel, Token } from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import { GenerationAbortedError, inputTooLong } from './inference-engine';
import type { EmbeddingOutcome, EmbeddingRequest } from './inference-engine';

/** GGUF's pooling types (llama.cpp's `llama_pooling_type`): what makes a model an embedding model. */
const POOLING_NONE = 0;
const POOLING_RANK = 4;

/** Whether the model's file names a pooling type that gives one vector per input (mean, CLS, last token). */
export function isEmbeddingModel(model: LlamaModel): boolean {
  const { metadata } = model.fileInfo;
  const architecture = metadata.general.architecture;
  const pooling = (metadata[architecture as keyof typeof metadata] as { pooling_type?: number } | undefined)?.pooling_type;
  return pooling !== undefined && pooling > POOLING_NONE && pooling < POOLING_RANK;
}

export interface LlamaEmbedderOptions {
  /** Embedding contexts, each evaluating one input at a time. */
  contexts: number;
  threads: number;
  contextSize: number;
}

type Task = (context: LlamaEmbeddingContext) => Promise<void>;

/**
 * Embeds with a pool of node-llama-cpp embedding contexts. One context evaluates one sequence,
 * so its calls wait for each other; here every input of every job waits in one line (first come,
 * first served) for the next free context, and the contexts evaluate side by side. Vectors go out
 * as they are made, raw: the door normalises them.
 */
export class LlamaEmbedder {
  private readonly line: Task[] = [];
  private readonly idle: LlamaEmbeddingContext[];

  private constructor(
    private readonly model: LlamaModel,
    private readonly contexts: LlamaEmbeddingContext[],
    readonly contextSize: number,
  ) {
    this.idle = [...contexts];
  }

  static async create(model: LlamaModel, options: LlamaEmbedderOptions): Promise<LlamaEmbedder> {
    const contextSize = Math.min(options.contextSize, model.trainContextSize);
    const contexts: LlamaEmbeddingContext[] = [];
    try {
      // A non-causal model (BERT-like) evaluates an input in one batch: the batch holds the longest.
      for (let made = 0; made < options.contexts; made++) {
        contexts.push(await model.createEmbeddingContext({ contextSize, batchSize: contextSize, threads: options.threads }));
      }
    } catch (error) {
      await Promise.all(contexts.map((context) => context.dispose()));
      throw error;
    }
    return new LlamaEmbedder(model, contexts, contextSize);
  }

  /** Every input is measured first: one that cannot fit fails the job before any is evaluated. */
  async embed({ inputs, signal, output }: EmbeddingRequest): Promise<EmbeddingOutcome> {
    const tokens = inputs.map((input) => this.tokensOf(input));
    // With the start and end tokens the model's tokenizer adds (any context measures alike).
    const lengths = tokens.map((input) => this.contexts[0].calculateInputLength(input));
    const longest = Math.max(...lengths);
    // node-llama-cpp keeps one position free after the input.
    if (longest >= this.contextSize) throw inputTooLong(this.contextSize, longest);
    await Promise.all(
      tokens.map((input, index) =>
        this.inLine(async (context) => {
          if (signal.aborted) return;
          const { vector } = await context.getEmbeddingFor(input);
          if (!signal.aborted) output.write({ type: 'embedding', index, vector: encodeVector(vector) });
        }),
      ),
    );
    if (signal.aborted) throw new GenerationAbortedError();
    return { promptTokens: lengths.reduce((sum, length) => sum + length, 0) };
  }

  async close(): Promise<void> {
    await Promise.all(this.contexts.map((context) => context.dispose()));
  }

  /**
   * Text is tokenized as the model's tokenizer does with special tokens as text; token ids are
   * taken as they are, copied (node-llama-cpp adds the start and end tokens to the array it is given).
   */
  private tokensOf(input: EmbeddingInput): Token[] {
    return typeof input === 'string' ? this.model.tokenize(input) : ([...input] as Token[]);
  }

  /** Runs `task` on the next free context, after every task that was in line before it. */
  private inLine(task: Task): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.line.push((context) => task(context).then(resolve, reject));
      this.next();
    });
  }

  private next(): void {
    while (this.idle.length > 0 && this.line.length > 0) {
      const context = this.idle.pop()!;
      const task = this.line.shift()!;
      void task(context).finally(() => {
        this.idle.push(context);
        this.next();
      });
    }
  }
}
