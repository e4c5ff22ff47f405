/**
 * Builds a word-level bigram language model as a 1-block "llama" GGUF.
 *
 * How it computes log P(next | current) with real llama.cpp layers:
 * - Every token maps to a "state" (its word, its punctuation mark, a JSON or
 *   tool-markup state, or START for anything else: bytes, characters, word
 *   prefixes, specials). Its embedding is one-hot on that state's dimension
 *   plus 1 on the bias dimension 0.
 * - The attention layer only moves that 1 from dimension 0 to a "tools offered"
 *   or "tool result seen" dimension when such a marker token is in the context
 *   (see tool-markup.ts); the FFN is zero. The residual stream therefore still
 *   has exactly two entries equal to 1.
 * - The final RMSNorm divides by rms = sqrt(2 / n_embd + eps); output_norm
 *   multiplies that back, so the normalised vector is exactly that pair.
 * - output.weight row t holds, per state s, log P(t | s), so logits are the
 *   bigram log-probabilities. Tokens that are never generated get -100 on the
 *   bias dimensions; generatable tokens that cannot follow s get -60. JSON
 *   tokens sit e^-25 below plain text in plain states (see json-shape.ts), so
 *   only a grammar brings them out.
 */
import type { CorpusName } from './corpus';
import { CORPORA } from './corpus';
import type { CorpusAnalysis } from './corpus-analysis';
import { analyseCorpus, isPunctuation, isSentenceEnd } from './corpus-analysis';
import type { GgufMetadata, GgufTensor } from './gguf-writer';
import { GgmlType } from './gguf-writer';
import type { Vocabulary } from './vocabulary';
import { buildVocabulary, SPACE, SPECIAL_TOKENS } from './vocabulary';
import { JSON_FALLBACK_OFFSET, JSON_PUNCTUATION, JSON_STATE, LITERALS, jsonDistributions, jsonTokenStates, jsonWords } from './json-shape';
import {
  CALL_OPENER,
  MARKER_DIMS,
  MARKER_KEY,
  MARKER_QUERY,
  NO_PARALLEL_CALL_PROBABILITY,
  PARALLEL_CALL_PROBABILITY,
  QWEN_TOOLS_TEMPLATE,
  TOOL_CALL_WEIGHT,
  TOOL_STATE,
  TOOL_TOKEN_LIST,
  TOOL_TOKEN_STATES,
  TOOL_TOKENS,
} from './tool-markup';

export const START_STATE = '<start>';
const HEAD_DIM = 64;
const FEED_FORWARD_LENGTH = 64;
const RMS_EPS = 1e-5;
/** Logit of a word/punctuation token that cannot follow the current state. */
export const IMPOSSIBLE_LOGIT = -60;
/** Logit of tokens that are never generated (bytes, prefixes, specials). */
export const NEVER_LOGIT = -100;

/** ChatML with Qwen 2.5's tool markup: node-llama-cpp reads a function-calling syntax from it. */
export const CHAT_TEMPLATE = QWEN_TOOLS_TEMPLATE;

export interface BigramModelOptions {
  readonly name: string;
  readonly corpus: CorpusName;
  /** P(EOS) right after a sentence-ending mark; default 0.3. */
  readonly eosProbability?: number;
  /** Type of the large matrices; norms are always F32. Default F16. */
  readonly weightType?: GgmlType;
  /** Trained context the model announces; default 32,768 so tests can send real tool sets. */
  readonly contextLength?: number;
  /** Whether a tool call may be followed by another (PARALLEL_CALL_PROBABILITY); default: the turn ends. */
  readonly parallelCalls?: boolean;
  /** Fill-in-the-middle tokens (FIM_TOKENS), named in the GGUF as llama.cpp reads them; after the middle one it starts a sentence. */
  readonly fim?: boolean;
}

/** Qwen2.5-Coder's fill-in-the-middle tokens, in their GGUF keys' order: prefix, suffix, middle. */
export const FIM_TOKENS = { pre: '<|fim_prefix|>', suf: '<|fim_suffix|>', mid: '<|fim_middle|>' } as const;

export interface BigramModel {
  readonly metadata: GgufMetadata;
  readonly tensors: readonly GgufTensor[];
  readonly vocabulary: Vocabulary;
  /** State names; state i lives on embedding dimension i + 1. */
  readonly states: readonly string[];
  /** Token id -> state index. */
  readonly tokenState: Int32Array;
  /**
   * Plain-text next-token distributions of the first `transitions.length` states
   * (START, words, the corpus's punctuation): token id -> probability, each sums to 1.
   */
  readonly transitions: ReadonlyArray<ReadonlyMap<number, number>>;
  /** JSON and tool-markup distributions by state index (see json-shape.ts); each sums to 1. */
  readonly jsonTransitions: ReadonlyMap<number, ReadonlyMap<number, number>>;
  readonly nEmbd: number;
  /** The bias dimensions: none marked, tools offered, a tool result seen. */
  readonly biasDims: { readonly plain: number; readonly tools: number; readonly toolResult: number };
  /** Lowercase words that JSON strings are made of. */
  readonly jsonWords: readonly string[];
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
function stateDistributions(corpus: CorpusAnalysis, states: readonly string[], eosProbability: number): Map<string, number>[] {
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

interface MarkerAttentionOptions {
  readonly nEmbd: number;
  /** Embedding dimensions of the `<tool_call>` and `<tool_response>` states. */
  readonly callDim: number;
  readonly responseDim: number;
  readonly biasDims: BigramModel['biasDims'];
}

/**
 * Head 0 attends to `<tool_call>` tokens, head 1 to `<tool_response>` tokens
 * (score MARKER_QUERY * MARKER_KEY / 8 against 0 for every other token). Each
 * head's value is 1 on such a token, so its output is ~1 when one is in the
 * context and exactly 0 when none is; the output projection then moves the
 * residual's bias entry: plain -> tools -> toolResult.
 * ggml stores a [in, out] matrix as `out` rows of `in` values.
 */
function markerAttention({ nEmbd, callDim, responseDim, biasDims }: MarkerAttentionOptions) {
  const q = new Float32Array(nEmbd * nEmbd);
  const k = new Float32Array(HEAD_DIM * nEmbd);
  const v = new Float32Array(HEAD_DIM * nEmbd);
  const output = new Float32Array(nEmbd * nEmbd);
  const head1 = HEAD_DIM;
  q[MARKER_DIMS.call * nEmbd + biasDims.plain] = MARKER_QUERY;
  q[(head1 + MARKER_DIMS.response) * nEmbd + biasDims.plain] = MARKER_QUERY;
  k[MARKER_DIMS.call * nEmbd + callDim] = MARKER_KEY;
  k[MARKER_DIMS.response * nEmbd + responseDim] = MARKER_KEY;
  v[0 * nEmbd + callDim] = 1;
  v[1 * nEmbd + responseDim] = 1;
  output[biasDims.plain * nEmbd + 0] = -1;
  output[biasDims.tools * nEmbd + 0] = 1;
  output[biasDims.tools * nEmbd + head1 + 1] = -1;
  output[biasDims.toolResult * nEmbd + head1 + 1] = 1;
  return { q, k, v, output };
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
  const words = jsonWords(corpus.words);
  const jsonStates = jsonTokenStates(words);
  const vocabulary = buildVocabulary(
    [...corpus.words.map((w) => SPACE + w), ...starters, ...corpus.punctuation, ...jsonStates.keys(), ...LITERALS, CALL_OPENER],
    // After the tool tokens: the ids of everything else do not depend on them.
    options.fim ? [...TOOL_TOKEN_LIST, ...Object.values(FIM_TOKENS)] : TOOL_TOKEN_LIST,
  );
  const nVocab = vocabulary.tokens.length;

  const plainStates = [START_STATE, ...corpus.words, ...corpus.punctuation];
  const extraPunctuation = JSON_PUNCTUATION.filter((p) => !corpus.punctuation.includes(p));
  const states = [...plainStates, ...extraPunctuation, ...Object.values(JSON_STATE), ...Object.values(TOOL_STATE)];
  const stateIndex = new Map(states.map((s, i) => [s, i]));
  const tokenState = new Int32Array(nVocab); // 0 = START for everything not listed below
  const assign = (text: string, state: string): void => {
    const id = tokenId(vocabulary, text);
    const s = stateIndex.get(state);
    if (s === undefined) throw new Error(`unknown state ${state}`);
    if (tokenState[id] !== 0 && tokenState[id] !== s) throw new Error(`token ${text} maps to two states`);
    tokenState[id] = s;
  };
  for (const w of corpus.words) assign(SPACE + w, w);
  for (const w of starters) assign(w, w);
  for (const p of [...corpus.punctuation, ...extraPunctuation]) assign(p, p);
  for (const [text, state] of jsonStates) assign(text, state);
  for (const [text, state] of TOOL_TOKEN_STATES) assign(text, state);

  const byId = (dist: ReadonlyMap<string, number>): Map<number, number> => new Map([...dist].map(([text, p]) => [tokenId(vocabulary, text), p]));
  const transitions = stateDistributions(corpus, plainStates, eosProbability).map(byId);
  const jsonTransitions = new Map<number, Map<number, number>>();
  const addJson = (state: string, dist: ReadonlyMap<string, number>): void => {
    const s = stateIndex.get(state);
    if (s === undefined) throw new Error(`unknown state ${state}`);
    jsonTransitions.set(s, byId(dist));
  };
  for (const [state, dist] of jsonDistributions(words, START_STATE)) addJson(state, dist);
  addJson(TOOL_STATE.call, new Map([[CALL_OPENER, 1]]));
  // After a call: end the turn, or (parallelCalls) a newline that may start another call.
  const anotherCall = options.parallelCalls ? PARALLEL_CALL_PROBABILITY : NO_PARALLEL_CALL_PROBABILITY;
  addJson(
    TOOL_STATE.callEnd,
    new Map([
      [SPECIAL_TOKENS.imEnd.text, 1 - anotherCall],
      ['<0x0A>', anotherCall],
    ]),
  );

  const toolCallId = tokenId(vocabulary, TOOL_TOKENS.call);
  const generatable = new Set<number>([toolCallId]);
  for (const dist of [...transitions, ...jsonTransitions.values()]) for (const id of dist.keys()) generatable.add(id);

  // One dimension per state, the three bias dimensions, padded to whole heads.
  const nEmbd = roundUp(states.length + 3, HEAD_DIM);
  const nHead = nEmbd / HEAD_DIM;
  const biasDims = { plain: 0, tools: states.length + 1, toolResult: states.length + 2 };

  const tokenEmbd = new Float32Array(nVocab * nEmbd);
  const output = new Float32Array(nVocab * nEmbd);
  for (let t = 0; t < nVocab; t++) {
    const row = t * nEmbd;
    tokenEmbd[row + biasDims.plain] = 1;
    tokenEmbd[row + 1 + tokenState[t]] = 1;
    const bias = generatable.has(t) ? 0 : NEVER_LOGIT;
    output[row + biasDims.plain] = bias;
    output[row + biasDims.tools] = bias;
    output[row + biasDims.toolResult] = bias;
    if (!generatable.has(t)) continue;
    for (let s = 0; s < states.length; s++) {
      const plain = s < transitions.length ? transitions[s] : undefined;
      const p = plain?.get(t);
      const q = jsonTransitions.get(s)?.get(t);
      const fallback = plain === undefined || plain.size === 0 ? 0 : JSON_FALLBACK_OFFSET;
      output[row + 1 + s] = p !== undefined ? Math.log(p) : q !== undefined ? Math.log(q) + fallback : IMPOSSIBLE_LOGIT;
    }
  }
  // <tool_call> opens an answer only while tools are offered and no result has come back.
  const callRow = toolCallId * nEmbd;
  output[callRow + biasDims.plain] = NEVER_LOGIT;
  output[callRow + biasDims.toolResult] = NEVER_LOGIT;
  output[callRow + 1 + (stateIndex.get(START_STATE) ?? 0)] = Math.log(TOOL_CALL_WEIGHT);

  // Exactly two entries equal to 1, so RMSNorm divides by sqrt(2 / nEmbd + eps).
  const unitNorm = filled(nEmbd, Math.sqrt(2 / nEmbd + RMS_EPS));
  const attention = markerAttention({
    nEmbd,
    callDim: 1 + (stateIndex.get(TOOL_STATE.call) ?? -1),
    responseDim: 1 + (stateIndex.get(TOOL_STATE.response) ?? -1),
    biasDims,
  });

  const zeros = (name: string, dims: [number, number]): GgufTensor => ({
    name,
    dims,
    type: weightType,
    data: new Float32Array(dims[0] * dims[1]),
  });
  const tensors: GgufTensor[] = [
    { name: 'token_embd.weight', dims: [nEmbd, nVocab], type: weightType, data: tokenEmbd },
    { name: 'output_norm.weight', dims: [nEmbd], type: GgmlType.F32, data: unitNorm },
    { name: 'output.weight', dims: [nEmbd, nVocab], type: weightType, data: output },
    // Normalised input = the embedding itself, so the marker weights below read exact 0s and 1s.
    { name: 'blk.0.attn_norm.weight', dims: [nEmbd], type: GgmlType.F32, data: unitNorm },
    // Single KV head (multi-query attention) keeps the K/V weights and KV cache small.
    { name: 'blk.0.attn_q.weight', dims: [nEmbd, nEmbd], type: weightType, data: attention.q },
    { name: 'blk.0.attn_k.weight', dims: [nEmbd, HEAD_DIM], type: weightType, data: attention.k },
    { name: 'blk.0.attn_v.weight', dims: [nEmbd, HEAD_DIM], type: weightType, data: attention.v },
    { name: 'blk.0.attn_output.weight', dims: [nEmbd, nEmbd], type: weightType, data: attention.output },
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
    ['llama.context_length', { type: 'uint32', value: options.contextLength ?? 32_768 }],
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
    ['tokenizer.chat_template', { type: 'string', value: CHAT_TEMPLATE }],
    ...(options.fim
      ? Object.entries(FIM_TOKENS).map(([key, text]): GgufMetadata[number] => [
          `tokenizer.ggml.fim_${key}_token_id`,
          { type: 'uint32', value: tokenId(vocabulary, text) },
        ])
      : []),
  ];

  return {
    metadata,
    tensors,
    vocabulary,
    states,
    tokenState,
    transitions,
    jsonTransitions,
    nEmbd,
    biasDims,
    jsonWords: words,
    corpus,
  };
}
