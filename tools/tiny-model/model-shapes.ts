/**
 * GGUF models of real shapes with seeded random weights, for measuring what a real model costs.
 *
 *   npx tsx tools/make-tiny-model.ts --shape llama-50m [--type f16|q8_0] [--seed 1] [--out models/x.gguf]
 *
 * Real layer counts, widths, head layouts and vocabulary sizes (Llama-2-like 32,000 tokens,
 * Qwen2.5's 151,936), so llama.cpp spends per token what such a model spends. The text they
 * write is noise. Their end-of-generation tokens (and every control, byte and user-defined
 * token) have all-zero output rows: a logit of exactly 0 while the best of tens of thousands of
 * random logits is far above it, so greedy decoding (the benchmark's temperature 0) never ends an
 * answer before max_tokens, and every answer has the requested length.
 *
 * Written tensor by tensor to the file (a 1.5B F16 model is 3 GiB), from a seeded pool of random
 * values copied at seeded offsets: the same arguments always give the same bytes, in seconds.
 */
import { closeSync, mkdirSync, openSync, renameSync, writeSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { CHAT_TEMPLATE } from './bigram-model';
import type { GgufMetadata, GgufTensorInfo } from './gguf-writer';
import { GGUF_DEFAULT_ALIGNMENT, GgmlType, writeGgufHeader } from './gguf-writer';
import { RandomTensors } from './random-tensors';
import { shapeVocabulary } from './shape-vocabulary';
import type { ShapeVocabulary } from './shape-vocabulary';

export interface ModelShape {
  /**
   * GGUF architecture: llama (untied output), qwen2 (q/k/v biases, output tied to the embeddings)
   * or qwen3 (q/k norms, tied output, and a classifier head llama.cpp reads: Qwen3-Reranker's).
   */
  readonly architecture: 'llama' | 'qwen2' | 'qwen3';
  readonly layers: number;
  readonly embedding: number;
  readonly feedForward: number;
  readonly heads: number;
  readonly kvHeads: number;
  readonly vocabulary: number;
  readonly ropeFreqBase: number;
  readonly description: string;
}

export const MODEL_SHAPES = {
  /** A TinyLlama-like layout at ~58M parameters: on a CPU it costs a real model's per-token work at a usable speed. */
  'llama-50m': {
    architecture: 'llama',
    layers: 8,
    embedding: 512,
    feedForward: 1536,
    heads: 8,
    kvHeads: 4,
    vocabulary: 32_000,
    ropeFreqBase: 10_000,
    description: '~58M Llama-like',
  },
  /** Qwen2.5-0.5B's layout. */
  'qwen-0.5b': {
    architecture: 'qwen2',
    layers: 24,
    embedding: 896,
    feedForward: 4864,
    heads: 14,
    kvHeads: 2,
    vocabulary: 151_936,
    ropeFreqBase: 1_000_000,
    description: 'Qwen2.5-0.5B-like (~494M)',
  },
  /** Qwen2.5-1.5B's layout. */
  'qwen-1.5b': {
    architecture: 'qwen2',
    layers: 28,
    embedding: 1536,
    feedForward: 8960,
    heads: 12,
    kvHeads: 2,
    vocabulary: 151_936,
    ropeFreqBase: 1_000_000,
    description: 'Qwen2.5-1.5B-like (~1.5B)',
  },
  /** Tests only: two small layers, so a spec makes and loads one in well under a second. */
  'test-tiny': {
    architecture: 'qwen2',
    layers: 2,
    embedding: 64,
    feedForward: 128,
    heads: 4,
    kvHeads: 2,
    vocabulary: 2_048,
    ropeFreqBase: 10_000,
    description: 'test shape',
  },
  /** Tests only: test-tiny's size in Qwen3's layout, the architecture of Qwen3-Reranker (`--pooling rank`). */
  'test-tiny-qwen3': {
    architecture: 'qwen3',
    layers: 2,
    embedding: 64,
    feedForward: 128,
    heads: 4,
    kvHeads: 2,
    vocabulary: 2_048,
    ropeFreqBase: 10_000,
    description: 'test shape (Qwen3 layout)',
  },
} as const satisfies Record<string, ModelShape>;

export type ShapeName = keyof typeof MODEL_SHAPES;
export type ShapeWeightType = 'f16' | 'q8_0';

export function isShapeName(name: string): name is ShapeName {
  return Object.hasOwn(MODEL_SHAPES, name);
}

/**
 * How an embedding model pools its tokens' states into one vector (GGUF's `pooling_type`); `rank`
 * makes a reranker: a classifier head scores a query and document pair (Qwen3's only).
 */
export const POOLING_TYPES = { mean: 1, cls: 2, last: 3, rank: 4 } as const;
export type PoolingName = keyof typeof POOLING_TYPES;

export function isPoolingName(name: string): name is PoolingName {
  return Object.hasOwn(POOLING_TYPES, name);
}

export interface ShapeModelOptions {
  readonly shape: ShapeName;
  readonly type: ShapeWeightType;
  readonly seed: number;
  readonly out: string;
  readonly contextLength?: number;
  /** Makes it an embedding model (as Qwen3-Embedding is a decoder with last-token pooling): llama.cpp then only embeds with it. */
  readonly pooling?: PoolingName;
}

export interface ShapeModelResult {
  readonly path: string;
  readonly bytes: number;
  readonly parameters: number;
}

const RMS_EPS = 1e-6;
const Q8_0_BLOCK = 32;
const Q8_0_BLOCK_BYTES = 34;

interface PlannedTensor extends GgufTensorInfo {
  /** How its bytes are made: norms are ones, biases zeros, matrices random (output rows of `silentRows` zero). */
  readonly fill: 'ones' | 'zeros' | 'random';
  readonly silentRows?: readonly number[];
}

function byteSize(dims: readonly number[], type: GgmlType): number {
  const count = dims.reduce((a, b) => a * b, 1);
  if (type === GgmlType.F32) return count * 4;
  if (type === GgmlType.F16) return count * 2;
  return (count / Q8_0_BLOCK) * Q8_0_BLOCK_BYTES;
}

/**
 * A reranker's labels: llama.cpp's Qwen3 graph takes the softmax of the classifier head's two
 * outputs and scores a pair by the first, as Qwen3-Reranker's "yes" against "no".
 */
const RANKING_LABELS = ['yes', 'no'];

function planTensors(shape: ModelShape, weightType: GgmlType, silentRows: readonly number[], ranking: boolean): PlannedTensor[] {
  const headDim = shape.embedding / shape.heads;
  const kvWidth = headDim * shape.kvHeads;
  const matrix = (name: string, columns: number, rows: number, extra: Partial<PlannedTensor> = {}): PlannedTensor => ({
    name,
    dims: [columns, rows],
    type: weightType,
    byteSize: byteSize([columns, rows], weightType),
    fill: 'random',
    ...extra,
  });
  const vector = (name: string, length: number, fill: 'ones' | 'zeros'): PlannedTensor => ({
    name,
    dims: [length],
    type: GgmlType.F32,
    byteSize: length * 4,
    fill,
  });
  const tied = shape.architecture !== 'llama';
  const tensors: PlannedTensor[] = [matrix('token_embd.weight', shape.embedding, shape.vocabulary, tied ? { silentRows } : {})];
  for (let layer = 0; layer < shape.layers; layer += 1) {
    const block = `blk.${layer}`;
    tensors.push(
      vector(`${block}.attn_norm.weight`, shape.embedding, 'ones'),
      matrix(`${block}.attn_q.weight`, shape.embedding, shape.embedding),
      matrix(`${block}.attn_k.weight`, shape.embedding, kvWidth),
      matrix(`${block}.attn_v.weight`, shape.embedding, kvWidth),
    );
    if (shape.architecture === 'qwen3')
      tensors.push(vector(`${block}.attn_q_norm.weight`, headDim, 'ones'), vector(`${block}.attn_k_norm.weight`, headDim, 'ones'));
    if (shape.architecture === 'qwen2') {
      tensors.push(
        vector(`${block}.attn_q.bias`, shape.embedding, 'zeros'),
        vector(`${block}.attn_k.bias`, kvWidth, 'zeros'),
        vector(`${block}.attn_v.bias`, kvWidth, 'zeros'),
      );
    }
    tensors.push(
      matrix(`${block}.attn_output.weight`, shape.embedding, shape.embedding),
      vector(`${block}.ffn_norm.weight`, shape.embedding, 'ones'),
      matrix(`${block}.ffn_gate.weight`, shape.embedding, shape.feedForward),
      matrix(`${block}.ffn_up.weight`, shape.embedding, shape.feedForward),
      matrix(`${block}.ffn_down.weight`, shape.feedForward, shape.embedding),
    );
  }
  tensors.push(vector('output_norm.weight', shape.embedding, 'ones'));
  if (ranking) tensors.push(matrix('cls.output.weight', shape.embedding, RANKING_LABELS.length));
  if (!tied) tensors.push(matrix('output.weight', shape.embedding, shape.vocabulary, { silentRows }));
  return tensors;
}

function shapeMetadata(
  name: string,
  shape: ModelShape,
  weightType: GgmlType,
  vocabulary: ShapeVocabulary,
  contextLength: number,
  pooling?: PoolingName,
): GgufMetadata {
  const arch = shape.architecture;
  return [
    ...(pooling ? ([[`${arch}.pooling_type`, { type: 'uint32', value: POOLING_TYPES[pooling] }]] as GgufMetadata) : []),
    ...(pooling === 'rank' ? ([[`${arch}.classifier.output_labels`, { type: 'string[]', value: RANKING_LABELS }]] as GgufMetadata) : []),
    ['general.architecture', { type: 'string', value: arch }],
    ['general.name', { type: 'string', value: name }],
    ['general.description', { type: 'string', value: `${shape.description}: real shape, seeded random weights (benchmarks only)` }],
    // llama_ftype: 1 = mostly F16, 7 = mostly Q8_0.
    ['general.file_type', { type: 'uint32', value: weightType === GgmlType.F16 ? 1 : 7 }],
    [`${arch}.vocab_size`, { type: 'uint32', value: shape.vocabulary }],
    [`${arch}.context_length`, { type: 'uint32', value: contextLength }],
    [`${arch}.embedding_length`, { type: 'uint32', value: shape.embedding }],
    [`${arch}.block_count`, { type: 'uint32', value: shape.layers }],
    [`${arch}.feed_forward_length`, { type: 'uint32', value: shape.feedForward }],
    [`${arch}.attention.head_count`, { type: 'uint32', value: shape.heads }],
    [`${arch}.attention.head_count_kv`, { type: 'uint32', value: shape.kvHeads }],
    [`${arch}.rope.dimension_count`, { type: 'uint32', value: shape.embedding / shape.heads }],
    [`${arch}.rope.freq_base`, { type: 'float32', value: shape.ropeFreqBase }],
    [`${arch}.attention.layer_norm_rms_epsilon`, { type: 'float32', value: RMS_EPS }],
    ['tokenizer.ggml.model', { type: 'string', value: 'llama' }],
    ['tokenizer.ggml.tokens', { type: 'string[]', value: vocabulary.tokens }],
    ['tokenizer.ggml.scores', { type: 'float32[]', value: vocabulary.scores }],
    ['tokenizer.ggml.token_type', { type: 'int32[]', value: vocabulary.types }],
    ['tokenizer.ggml.bos_token_id', { type: 'uint32', value: vocabulary.special.bos }],
    ['tokenizer.ggml.eos_token_id', { type: 'uint32', value: vocabulary.special.imEnd }],
    ['tokenizer.ggml.eot_token_id', { type: 'uint32', value: vocabulary.special.imEnd }],
    ['tokenizer.ggml.unknown_token_id', { type: 'uint32', value: vocabulary.special.unk }],
    ['tokenizer.ggml.padding_token_id', { type: 'uint32', value: vocabulary.special.unk }],
    ['tokenizer.ggml.add_bos_token', { type: 'bool', value: false }],
    ['tokenizer.ggml.add_eos_token', { type: 'bool', value: false }],
    ['tokenizer.ggml.add_space_prefix', { type: 'bool', value: false }],
    ['tokenizer.chat_template', { type: 'string', value: CHAT_TEMPLATE }],
  ];
}

/** A random tensor's bytes, with the rows of `silentRows` (tokens that must never be chosen) zeroed. */
function tensorBytes(tensor: PlannedTensor, random: RandomTensors): Buffer {
  if (tensor.fill === 'zeros') return Buffer.alloc(tensor.byteSize);
  if (tensor.fill === 'ones') {
    const ones = Buffer.alloc(tensor.byteSize);
    for (let offset = 0; offset < ones.length; offset += 4) ones.writeFloatLE(1, offset);
    return ones;
  }
  const data = random.data(tensor.byteSize, tensor.type === GgmlType.F16 ? 'f16' : 'q8_0');
  const rowBytes = tensor.byteSize / (tensor.dims[1] ?? 1);
  for (const row of tensor.silentRows ?? []) data.fill(0, row * rowBytes, (row + 1) * rowBytes);
  return data;
}

/** Writes the shape's GGUF to `options.out` (through a temporary file, so no reader sees half a model). */
export function makeShapeModel(options: ShapeModelOptions): ShapeModelResult {
  const shape: ModelShape = MODEL_SHAPES[options.shape];
  if (options.pooling === 'rank' && shape.architecture !== 'qwen3')
    throw new Error(`--pooling rank needs a Qwen3 shape (llama.cpp reads no classifier head for ${shape.architecture})`);
  const weightType = options.type === 'f16' ? GgmlType.F16 : GgmlType.Q8_0;
  const vocabulary = shapeVocabulary(shape.vocabulary);
  const tensors = planTensors(shape, weightType, vocabulary.silentTokens, options.pooling === 'rank');
  const name = `${options.shape}-${options.type}${options.pooling ? `-${options.pooling}-pooled` : ''}`;
  const header = writeGgufHeader(shapeMetadata(name, shape, weightType, vocabulary, options.contextLength ?? 32_768, options.pooling), tensors);
  const random = new RandomTensors(
    options.seed,
    tensors.reduce((sum, tensor) => sum + (tensor.fill === 'random' ? tensor.byteSize : 0), 0),
  );

  const path = resolve(options.out);
  mkdirSync(dirname(path), { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  const file = openSync(temporary, 'w');
  let bytes = 0;
  try {
    bytes += writeSync(file, header);
    for (const tensor of tensors) {
      bytes += writeSync(file, tensorBytes(tensor, random));
      const padding = (GGUF_DEFAULT_ALIGNMENT - (bytes % GGUF_DEFAULT_ALIGNMENT)) % GGUF_DEFAULT_ALIGNMENT;
      if (padding > 0) bytes += writeSync(file, Buffer.alloc(padding));
    }
  } finally {
    closeSync(file);
  }
  renameSync(temporary, path);
  const parameters = tensors.reduce((sum, tensor) => sum + tensor.dims.reduce((a, b) => a * b, 1), 0);
  return { path, bytes, parameters };
}
