import { encodeVector } from '@app/contracts';
import type { EngineCapabilities } from '@app/contracts';
import type { Llama, LlamaModel, Token } from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import { GenerationAbortedError, inputTooLong } from '../inference-engine';
import type {
  EmbeddingOutcome,
  EmbeddingRequest,
  GenerationOutcome,
  InferenceEngine,
  RankOutcome,
  TokenizeOutcome,
  TokenizeRequest,
} from '../inference-engine';
import { embeddingInputTokens, POOLING_CLS, POOLING_MEAN, poolingOf } from '../llama-embeddings';
import { ServerBackedEngine } from './server-backed-engine';
import type { RunningServer } from './llama-server-process';
import { noGenerationCapabilities } from '../llama-sampling';

/**
 * The tokens around an input that node-llama-cpp's embedding context adds (its tokenizerUtils,
 * after llama.cpp's tokenizer): a WordPiece vocabulary's start and separator, a Unigram one's end,
 * else the start and end tokens the vocabulary asks for; none twice. llama-server embeds token ids
 * as given, so the worker adds them, and both engines embed the same tokens.
 */
export function embeddingTokens(model: LlamaModel, input: Token[]): Token[] {
  const { vocabularyType, tokens } = model;
  const type = String(vocabularyType);
  const start = type === 'rwkv' || type === 'ugm' ? null : type === 'wpm' || tokens.shouldPrependBosToken ? tokens.bos : null;
  const end = type === 'rwkv' ? null : type === 'wpm' ? tokens.sep : type === 'ugm' || tokens.shouldAppendEosToken ? tokens.eos : null;
  return [...(start !== null && input[0] !== start ? [start] : []), ...input, ...(end !== null && input.at(-1) !== end ? [end] : [])];
}

/** One input as llama-server's `/embeddings` answers it: one row pooled, or one row per token (`--pooling none`). */
interface ServerEmbedding {
  index: number;
  embedding: number[][];
}

/** How the model's file pools a sequence into one vector (GGUF's pooling types 1, 2 and 3). */
export type Pooling = 'mean' | 'cls' | 'last';

export function pooledBy(model: LlamaModel): Pooling {
  const pooling = poolingOf(model);
  return pooling === POOLING_MEAN ? 'mean' : pooling === POOLING_CLS ? 'cls' : 'last';
}

/**
 * What the server pools. With several sequences in one batch, this llama.cpp's server gives some
 * of them another sequence's mean or first-token vector (measured on tiny-embed: 48 of 64 inputs
 * of mixed lengths off by up to 1.3), while its per-token rows and its last-token pooling are
 * right: so mean and CLS are pooled here, from the per-token rows, at the cost of sending them.
 */
export const serverPooling = (pooling: Pooling): 'pooled' | 'per-token' => (pooling === 'last' ? 'pooled' : 'per-token');

/** One vector of an input's per-token rows: their mean, or the first token's. */
function pooled(rows: number[][], pooling: 'mean' | 'cls'): ArrayLike<number> {
  if (pooling === 'cls' || rows.length === 1) return rows[0];
  const sum = new Float64Array(rows[0].length);
  for (const row of rows) row.forEach((value, at) => (sum[at] += value));
  return sum.map((value) => value / rows.length);
}

/**
 * llama-server as the engine of an embedding model (`--embeddings`, pooled as its file says; see serverPooling):
 * the worker tokenizes as the llama engine does (text with special tokens as text, token ids as
 * given, the start and end tokens added), and one `/embeddings` request carries a job's inputs,
 * which the server spreads over its slots. Vectors are raw (`embd_normalize: -1`): the door
 * normalises them, as it does the llama engine's.
 */
export class LlamaServerPoolingEngine extends ServerBackedEngine implements InferenceEngine {
  readonly capabilities: EngineCapabilities;

  constructor(
    llama: Llama,
    model: LlamaModel,
    server: RunningServer,
    private readonly pooling: Pooling,
    readonly contextSize: number,
    readonly slots: number,
  ) {
    super(llama, model, server);
    this.capabilities = { kinds: ['embed', 'tokenize'], ...noGenerationCapabilities(model) };
  }

  /** Every input is measured first: one that cannot fit fails the job before any is evaluated. */
  async embed({ inputs, signal, output }: EmbeddingRequest): Promise<EmbeddingOutcome> {
    const tokens = inputs.map((input) => embeddingTokens(this.model, embeddingInputTokens(this.model, input)));
    const longest = Math.max(...tokens.map((input) => input.length));
    // As on the llama engine (node-llama-cpp keeps one position free after the input).
    if (longest >= this.contextSize) throw inputTooLong(this.contextSize, longest);
    let answered: ServerEmbedding[];
    try {
      const response = await fetch(`${this.server.url}/embeddings`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ content: tokens, embd_normalize: -1 }),
        signal,
      });
      if (!response.ok) throw new Error(`llama-server answered /embeddings with ${response.status}: ${await response.text()}`);
      answered = (await response.json()) as ServerEmbedding[];
    } catch (error) {
      if (signal.aborted) throw new GenerationAbortedError();
      throw error;
    }
    const { pooling } = this;
    for (const { index, embedding } of answered)
      output.write({ type: 'embedding', index, vector: encodeVector(pooling === 'last' ? embedding[0] : pooled(embedding, pooling)) });
    return { promptTokens: tokens.reduce((sum, input) => sum + input.length, 0) };
  }

  generate(): Promise<GenerationOutcome> {
    return Promise.reject(new Error('an embedding model does not generate'));
  }

  rank(): Promise<RankOutcome> {
    return Promise.reject(new Error('an embedding model does not rank'));
  }

  tokenize(request: TokenizeRequest): Promise<TokenizeOutcome> {
    return this.vocabularyTokenize(request);
  }
}
