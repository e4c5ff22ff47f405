/**
 * Builds a word-level bigram language model as a 1-block "llama" GGUF.
 *
 * How it computes log P(next | current) with real llama.cpp layers:
 * - Every token maps to a "state" (its word, its punctuation mark, or START for
 *   anything else: bytes, characters, word prefixes, specials). Its embedding
 *   is one-hot on that state's dimension plus 1 on a shared bias dimension 0.
 * - Attention and FFN weights are zero, so the block adds nothing and the
 *   residual stream after it is still the current token's embedding.
 * - The final RMSNorm divides by rms = sqrt(2 / n_embd + eps); output_norm
 *   multiplies that back, so the normalised vector is exactly the embedding.
 * - output.weight row t holds, per state s, log P(t | s), so logits are the
 *   bigram log-probabilities. Tokens that are never generated get -100 on the
 *   bias dimension; generatable tokens that cannot follow s get -60.
 */
import type { CorpusName } from './corpus';
import { CORPORA } from './corpus';
import type { CorpusAnalysis} from './corpus-analysis';
import { analyseCorpus, isPunctuation, isSentenceEnd } from './corpus-analysis';
import type { GgufMetadata, GgufTensor } from './gguf-writer';
import { GgmlType } from './gguf-writer';
import type { Vocabulary } from './vocabulary';
import { buildVocabulary, SPACE, SPECIAL_TOKENS } from './vocabulary';

export const START_STATE = '<start>';
const HEAD_DIM = 64;
const FEED_FORWARD_LENGTH = 64;
const RMS_EPS = 1e-5;
/** Logit of a word/punctuation token that cannot follow the current state. */
export const IMPOSSIBLE_LOGIT = -60;
/** Logit of tokens that are never generated (bytes, prefixes, specials). */
export const NEVER_LOGIT = -100;

/** Standard ChatML, so node-llama-cpp resolves it to its ChatML wrapper. */
export const CHATML_TEMPLATE =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

export interface BigramModelOptions {
  readonly name: string;
  readonly corpus: CorpusName;
  /** P(EOS) right after a sentence-ending mark; default 0.3. */
  readonly eosProbability?: number;
  /** Type of the large matrices; norms are always F32. Default F16. */
  readonly weightType?: GgmlType;
  readonly contextLength?: number;
}

export interface BigramModel {
  readonly metadata: GgufMetadata;
  readonly tensors: readonly GgufTensor[];
  readonly vocabulary: Vocabulary;
  /** State names; state i lives on embedding dimension i + 1. */
  readonly states: readonly string[];
  /** Token id -> state index. */
  readonly tokenState: Int32Array;
  /** State index -> (token id -> probability); each map sums to 1. */
  readonly transitions: ReadonlyArray<ReadonlyMap<number, number>>;
  readonly nEmbd: number;
  readonly corpus: CorpusAnalysis;
}

function normalise(counts: ReadonlyMap<string, number>, scale = 1): Map<string, number> {
  let total = 0;
  for (const c of counts.values()) total += c;
  return new Map([...counts].map(([k, c]) => [k, (scale * c) / total]));
}

function tokenId(vocab: Vocabulary, text: string): number {
  const id = vocab.ids.get(text);
  if (id === undefined) throw new Error(`token missing from vocabulary: ${text}`);
  return id;
}

/** Token text for an item that follows another item (words get the space marker). */
function followingPiece(item: string): string {
  return isPunctuation(item) ? item : SPACE + item;
}

/** Next-token distributions for every state, keyed by token text. */
function stateDistributions(
  corpus: CorpusAnalysis,
  states: readonly string[],
  eosProbability: number,
): Map<string, number>[] {
  return states.map((state) => {
    if (state === START_STATE) {
      // First word of an answer: no leading space, so responses start cleanly.
      return normalise(corpus.starters);
    }
    if (isSentenceEnd(state)) {
      const next = new Map([...normalise(corpus.starters, 1 - eosProbability)].map(([w, p]) => [SPACE + w, p]));
      next.set(SPECIAL_TOKENS.imEnd.text, eosProbability);
      return next;
    }
    const follows = corpus.follows.get(state);
    if (follows === undefined) return new Map([['.', 1]]); // only possible for the text's last item
    return new Map([...normalise(follows)].map(([item, p]) => [followingPiece(item), p]));
  });
}

function roundUp(n: number, multiple: number): number {
  return Math.ceil(n / multiple) * multiple;
}

function filled(length: number, value: number): Float32Array {
  return new Float32Array(length).fill(value);
}

export function buildBigramModel(options: BigramModelOptions): BigramModel {
  const eosProbability = options.eosProbability ?? 0.3;
  if (!(eosProbability > 0 && eosProbability < 1)) throw new Error('eosProbability must be in (0, 1)');
  const weightType = options.weightType ?? GgmlType.F16;
  const corpus = analyseCorpus(CORPORA[options.corpus]);

  const starters = [...corpus.starters.keys()];
  const vocabulary = buildVocabulary([
    ...corpus.words.map((w) => SPACE + w),
    ...starters,
    ...corpus.punctuation,
  ]);
  const nVocab = vocabulary.tokens.length;

  const states = [START_STATE, ...corpus.words, ...corpus.punctuation];
  const stateIndex = new Map(states.map((s, i) => [s, i]));
  const tokenState = new Int32Array(nVocab); // 0 = START for everything not listed below
  const assign = (text: string, state: string): void => {
    const id = tokenId(vocabulary, text);
    const s = stateIndex.get(state) ?? 0;
    if (tokenState[id] !== 0 && tokenState[id] !== s) throw new Error(`token ${text} maps to two states`);
    tokenState[id] = s;
  };
  for (const w of corpus.words) assign(SPACE + w, w);
  for (const w of starters) assign(w, w);
  for (const p of corpus.punctuation) assign(p, p);

  const transitions = stateDistributions(corpus, states, eosProbability).map(
    (dist) => new Map([...dist].map(([text, p]) => [tokenId(vocabulary, text), p])),
  );
  const generatable = new Set<number>();
  for (const dist of transitions) for (const id of dist.keys()) generatable.add(id);

  // One dimension per state plus the bias dimension, padded to whole heads.
  const nEmbd = roundUp(states.length + 1, HEAD_DIM);
  const nHead = nEmbd / HEAD_DIM;

  const tokenEmbd = new Float32Array(nVocab * nEmbd);
  const output = new Float32Array(nVocab * nEmbd);
  for (let t = 0; t < nVocab; t++) {
    const row = t * nEmbd;
    tokenEmbd[row] = 1;
    tokenEmbd[row + 1 + tokenState[t]] = 1;
    if (!generatable.has(t)) {
      output[row] = NEVER_LOGIT;
      continue;
    }
    for (let s = 0; s < states.length; s++) {
      const p = transitions[s].get(t);
      output[row + 1 + s] = p === undefined ? IMPOSSIBLE_LOGIT : Math.log(p);
    }
  }
  // Exactly two entries equal to 1, so RMSNorm divides by sqrt(2 / nEmbd + eps).
  const outputNorm = filled(nEmbd, Math.sqrt(2 / nEmbd + RMS_EPS));

  const zeros = (name: string, dims: [number, number]): GgufTensor => ({
    name,
    dims,
    type: weightType,
    data: new Float32Array(dims[0] * dims[1]),
  });
  const tensors: GgufTensor[] = [
    { name: 'token_embd.weight', dims: [nEmbd, nVocab], type: weightType, data: tokenEmbd },
    { name: 'output_norm.weight', dims: [nEmbd], type: GgmlType.F32, data: outputNorm },
    { name: 'output.weight', dims: [nEmbd, nVocab], type: weightType, data: output },
    { name: 'blk.0.attn_norm.weight', dims: [nEmbd], type: GgmlType.F32, data: filled(nEmbd, 1) },
    // Single KV head (multi-query attention) keeps the zero K/V weights and KV cache small.
    zeros('blk.0.attn_q.weight', [nEmbd, nEmbd]),
    zeros('blk.0.attn_k.weight', [nEmbd, HEAD_DIM]),
    zeros('blk.0.attn_v.weight', [nEmbd, HEAD_DIM]),
    zeros('blk.0.attn_output.weight', [nEmbd, nEmbd]),
    { name: 'blk.0.ffn_norm.weight', dims: [nEmbd], type: GgmlType.F32, data: filled(nEmbd, 1) },
    zeros('blk.0.ffn_gate.weight', [nEmbd, FEED_FORWARD_LENGTH]),
    zeros('blk.0.ffn_up.weight', [nEmbd, FEED_FORWARD_LENGTH]),
    zeros('blk.0.ffn_down.weight', [FEED_FORWARD_LENGTH, nEmbd]),
  ];

  const metadata: GgufMetadata = [
    ['general.architecture', { type: 'string', value: 'llama' }],
    ['general.name', { type: 'string', value: options.name }],
    ['general.description', { type: 'string', value: `Word-level bigram test model over the "${options.corpus}" corpus` }],
    // llama_ftype: 0 = all F32, 1 = mostly F16.
    ['general.file_type', { type: 'uint32', value: weightType === GgmlType.F16 ? 1 : 0 }],
    ['llama.vocab_size', { type: 'uint32', value: nVocab }],
    ['llama.context_length', { type: 'uint32', value: options.contextLength ?? 4096 }],
    ['llama.embedding_length', { type: 'uint32', value: nEmbd }],
    ['llama.block_count', { type: 'uint32', value: 1 }],
    ['llama.feed_forward_length', { type: 'uint32', value: FEED_FORWARD_LENGTH }],
    ['llama.attention.head_count', { type: 'uint32', value: nHead }],
    ['llama.attention.head_count_kv', { type: 'uint32', value: 1 }],
    ['llama.rope.dimension_count', { type: 'uint32', value: HEAD_DIM }],
    ['llama.rope.freq_base', { type: 'float32', value: 10000 }],
    ['llama.attention.layer_norm_rms_epsilon', { type: 'float32', value: RMS_EPS }],
    ['tokenizer.ggml.model', { type: 'string', value: 'llama' }],
    ['tokenizer.ggml.tokens', { type: 'string[]', value: vocabulary.tokens }],
    ['tokenizer.ggml.scores', { type: 'float32[]', value: vocabulary.scores }],
    ['tokenizer.ggml.token_type', { type: 'int32[]', value: vocabulary.types }],
    ['tokenizer.ggml.bos_token_id', { type: 'uint32', value: SPECIAL_TOKENS.bos.id }],
    ['tokenizer.ggml.eos_token_id', { type: 'uint32', value: SPECIAL_TOKENS.imEnd.id }],
    ['tokenizer.ggml.eot_token_id', { type: 'uint32', value: SPECIAL_TOKENS.imEnd.id }],
    ['tokenizer.ggml.unknown_token_id', { type: 'uint32', value: SPECIAL_TOKENS.unk.id }],
    ['tokenizer.ggml.padding_token_id', { type: 'uint32', value: SPECIAL_TOKENS.unk.id }],
    ['tokenizer.ggml.add_bos_token', { type: 'bool', value: true }],
    ['tokenizer.ggml.add_eos_token', { type: 'bool', value: false }],
    // No implicit leading "▁": generated tokens then re-tokenize to the same ids.
    ['tokenizer.ggml.add_space_prefix', { type: 'bool', value: false }],
    ['tokenizer.chat_template', { type: 'string', value: CHATML_TEMPLATE }],
  ];

  return { metadata, tensors, vocabulary, states, tokenState, transitions, nEmbd, corpus };
}
