import { createHash } from 'node:crypto';
import type { BigramModel } from './bigram-model';
import { buildBigramModel, CHAT_TEMPLATE, FIM_TOKENS, NEVER_LOGIT, START_STATE } from './bigram-model';
import { analyseCorpus, splitItems } from './corpus-analysis';
import type { CorpusName } from './corpus';
import { CORPORA } from './corpus';
import type { GgufReadResult } from './gguf-reader';
import { readGguf } from './gguf-reader';
import { writeGguf } from './gguf-writer';
import type { Vocabulary } from './vocabulary';
import { SPACE, SPECIAL_TOKENS, TokenType } from './vocabulary';
import { JSON_STATE } from './json-shape';
import { CALL_OPENER, TOOL_TOKEN_LIST } from './tool-markup';

/**
 * llama.cpp's SPM merge loop in miniature: repeatedly merge the adjacent pair
 * whose concatenation is a piece, highest score first, leftmost on ties.
 */
function spmTokenize(vocab: Vocabulary, text: string): string[] {
  const symbols = Array.from(text.replace(/ /g, SPACE));
  for (;;) {
    let best = -1;
    let bestScore = -Infinity;
    for (let i = 0; i + 1 < symbols.length; i++) {
      const id = vocab.ids.get(symbols[i] + symbols[i + 1]);
      if (id !== undefined && vocab.scores[id] > bestScore) {
        best = i;
        bestScore = vocab.scores[id];
      }
    }
    if (best < 0) return symbols;
    symbols.splice(best, 2, symbols[best] + symbols[best + 1]);
  }
}

function tensor(file: GgufReadResult, name: string): Float32Array {
  const t = file.tensors.find((x) => x.name === name);
  if (!t) throw new Error(`missing tensor ${name}`);
  return t.values;
}

/** The model's forward pass for one token, computed from the written file (F16 rounding included). */
function nextTokenProbabilities(file: GgufReadResult, token: number): Float64Array {
  const nEmbd = file.metadata.get('llama.embedding_length') as number;
  const eps = file.metadata.get('llama.attention.layer_norm_rms_epsilon') as number;
  const embd = tensor(file, 'token_embd.weight');
  const norm = tensor(file, 'output_norm.weight');
  const out = tensor(file, 'output.weight');
  const x = embd.subarray(token * nEmbd, (token + 1) * nEmbd);
  const rms = Math.sqrt(x.reduce((s, v) => s + v * v, 0) / nEmbd + eps);
  const y = Array.from(x, (v, i) => (v / rms) * norm[i]);
  const nVocab = out.length / nEmbd;
  const logits = new Float64Array(nVocab);
  for (let t = 0; t < nVocab; t++) {
    let dot = 0;
    for (let j = 0; j < nEmbd; j++) dot += out[t * nEmbd + j] * y[j];
    logits[t] = dot;
  }
  const max = Math.max(...logits);
  const exp = logits.map((l) => Math.exp(l - max));
  const sum = exp.reduce((a, b) => a + b, 0);
  return exp.map((e) => e / sum);
}

describe('analyseCorpus', () => {
  it('splits words (with inner apostrophes) and punctuation, dropping quotes and dashes', () => {
    expect(splitItems(`"Well!" thought Alice, "they'll see a rabbit-hole."`)).toEqual([
      'Well',
      '!',
      'thought',
      'Alice',
      ',',
      "they'll",
      'see',
      'a',
      'rabbit',
      'hole',
      '.',
    ]);
  });

  it('counts capitalised sentence starters and bigram successors', () => {
    const a = analyseCorpus('The cat sat. the dog ran. A cat ran!');
    expect([...a.starters]).toEqual([
      ['A', 1],
      ['The', 1],
    ]);
    expect([...(a.follows.get('cat') ?? [])]).toEqual([
      ['ran', 1],
      ['sat', 1],
    ]);
    expect(a.words).toEqual(['A', 'The', 'cat', 'dog', 'ran', 'sat', 'the']);
  });
});

describe.each<CorpusName>(['alice', 'fables'])('buildBigramModel(%s)', (corpus) => {
  const model: BigramModel = buildBigramModel({ name: `tiny-${corpus}`, corpus });
  const bytes = writeGguf(model);
  const file = readGguf(bytes);
  const vocab = model.vocabulary;
  const id = (text: string): number => {
    const v = vocab.ids.get(text);
    if (v === undefined) throw new Error(`no token ${text}`);
    return v;
  };

  it('has the special, byte and word tokens with the right types', () => {
    expect(vocab.tokens.slice(0, 5)).toEqual(['<unk>', '<s>', '</s>', '<|im_start|>', '<|im_end|>']);
    expect([...vocab.types.slice(0, 5)]).toEqual([TokenType.UNKNOWN, TokenType.CONTROL, TokenType.CONTROL, TokenType.CONTROL, TokenType.CONTROL]);
    expect(vocab.tokens[5]).toBe('<0x00>');
    expect(vocab.tokens[5 + 0x0a]).toBe('<0x0A>');
    expect(vocab.tokens[5 + 255]).toBe('<0xFF>');
    expect(vocab.types.filter((t) => t === Number(TokenType.BYTE))).toHaveLength(256);
    for (const w of model.corpus.words) expect(vocab.ids.has(SPACE + w)).toBe(true);
    for (const w of model.corpus.starters.keys()) expect(vocab.ids.has(w)).toBe(true);
    for (const p of ['.', ',', '!', '?']) expect(vocab.ids.has(p)).toBe(true);
  });

  it('tokenizes every corpus word to a single token (SPM merge path exists)', () => {
    for (const w of model.corpus.words) expect(spmTokenize(vocab, ' ' + w)).toEqual([SPACE + w]);
    const sentence = model.corpus.items.slice(0, 12);
    const text = sentence.map((item, i) => (i === 0 || /^[.,!?;:]$/.test(item) ? item : ' ' + item)).join('');
    expect(spmTokenize(vocab, text)).toHaveLength(sentence.length);
  });

  it('has normalised next-token distributions with EOS only after sentence ends', () => {
    const eos = SPECIAL_TOKENS.imEnd.id;
    model.transitions.forEach((dist, s) => {
      const total = [...dist.values()].reduce((a, b) => a + b, 0);
      expect(total).toBeCloseTo(1, 12);
      for (const p of dist.values()) expect(p).toBeGreaterThan(0);
      const state = model.states[s];
      expect(dist.get(eos)).toBe(['.', '!', '?'].includes(state) ? 0.3 : undefined);
    });
    // The first word of an answer carries no leading space marker.
    const start = model.transitions[model.states.indexOf(START_STATE)];
    for (const t of start.keys()) expect(vocab.tokens[t].startsWith(SPACE)).toBe(false);
  });

  it('computes exactly those distributions through embedding, RMSNorm and output', () => {
    const probes = [SPECIAL_TOKENS.imStart.id, 5 + 0x0a, id(SPACE + 'the'), id('.'), id(',')];
    for (const token of probes) {
      const probs = nextTokenProbabilities(file, token);
      const expected = model.transitions[model.tokenState[token]];
      let covered = 0;
      for (const [t, p] of expected) {
        expect(Math.abs(probs[t] - p)).toBeLessThan(0.01 * p + 1e-9);
        covered += probs[t];
      }
      expect(covered).toBeGreaterThan(0.999999);
    }
    // Non-word tokens are pushed down by the bias dimension.
    const out = tensor(file, 'output.weight');
    expect(out[id('<0x41>') * model.nEmbd]).toBe(NEVER_LOGIT);
  });

  it('writes the metadata llama.cpp and node-llama-cpp rely on', () => {
    const m = file.metadata;
    expect(m.get('general.architecture')).toBe('llama');
    expect(m.get('general.name')).toBe(`tiny-${corpus}`);
    expect(m.get('llama.block_count')).toBe(1);
    expect(m.get('llama.context_length')).toBe(32_768);
    expect(model.nEmbd % 64).toBe(0);
    expect(model.nEmbd).toBeGreaterThan(model.states.length);
    expect(m.get('llama.embedding_length')).toBe(model.nEmbd);
    expect(m.get('llama.attention.head_count')).toBe(model.nEmbd / 64);
    expect(m.get('tokenizer.ggml.model')).toBe('llama');
    expect(m.get('tokenizer.ggml.bos_token_id')).toBe(1);
    expect(m.get('tokenizer.ggml.eos_token_id')).toBe(4);
    expect(m.get('tokenizer.ggml.add_bos_token')).toBe(true);
    expect(m.get('tokenizer.chat_template')).toBe(CHAT_TEMPLATE);
    expect((m.get('tokenizer.ggml.tokens') as string[]).length).toBe(vocab.tokens.length);
    expect(file.tensors.find((t) => t.name === 'token_embd.weight')?.dims).toEqual([model.nEmbd, vocab.tokens.length]);
  });

  it('is small and byte-for-byte deterministic', () => {
    expect(bytes.length).toBeLessThan(4 * 1024 * 1024);
    const again = writeGguf(buildBigramModel({ name: `tiny-${corpus}`, corpus }));
    expect(again.equals(bytes)).toBe(true);
  });
});

it('makes different models from the two corpora', () => {
  expect(Object.keys(CORPORA).sort()).toEqual(['alice', 'fables']);
  const hash = (corpus: CorpusName): string =>
    createHash('sha256')
      .update(writeGguf(buildBigramModel({ name: 'same', corpus })))
      .digest('hex');
  expect(hash('alice')).not.toBe(hash('fables'));
});

describe.each<CorpusName>(['alice', 'fables'])('JSON and tool behaviour (%s)', (corpus) => {
  const model = buildBigramModel({ name: `tiny-${corpus}`, corpus });
  const file = readGguf(writeGguf(model));
  const out = tensor(file, 'output.weight');
  const vocab = model.vocabulary;
  const id = (text: string): number => {
    const v = vocab.ids.get(text);
    if (v === undefined) throw new Error(`no token ${text}`);
    return v;
  };
  const state = (name: string): number => model.states.indexOf(name);
  /** Next-token probabilities after the attention layer left the bias 1 on `biasDim`. */
  const probabilities = (s: number, biasDim: number): Float64Array => {
    const nVocab = out.length / model.nEmbd;
    const logits = new Float64Array(nVocab);
    for (let t = 0; t < nVocab; t++) logits[t] = out[t * model.nEmbd + biasDim] + out[t * model.nEmbd + 1 + s];
    const max = Math.max(...logits);
    const exp = logits.map((l) => Math.exp(l - max));
    const sum = exp.reduce((a, b) => a + b, 0);
    return exp.map((e) => e / sum);
  };
  const start = state(START_STATE);

  it('has Qwen tool tokens as user-defined tokens after every piece, and the call opener as one piece', () => {
    const tail = vocab.tokens.slice(-TOOL_TOKEN_LIST.length);
    expect(tail).toEqual(['<tool_call>', '</tool_call>', '<tool_response>', '</tool_response>']);
    for (const t of tail) expect(vocab.types[id(t)]).toBe(TokenType.USER_DEFINED);
    expect(spmTokenize(vocab, '\n{"name": "')).toEqual([CALL_OPENER]);
    for (let c = 0x21; c <= 0x7e; c++) expect(vocab.ids.has(String.fromCharCode(c))).toBe(true);
  });

  it('adds fill-in-the-middle tokens after the tool tokens, named as llama.cpp reads them, leaving every other id as it was', () => {
    const fim = buildBigramModel({ name: 'fim', corpus, fim: true });
    const added = Object.values(FIM_TOKENS);
    expect(fim.vocabulary.tokens.slice(-added.length)).toEqual(added);
    expect(fim.vocabulary.tokens.slice(0, vocab.tokens.length)).toEqual(vocab.tokens);
    const metadata = new Map(fim.metadata);
    expect(metadata.get('tokenizer.ggml.fim_pre_token_id')).toEqual({ type: 'uint32', value: vocab.tokens.length });
    expect(metadata.get('tokenizer.ggml.fim_mid_token_id')).toEqual({ type: 'uint32', value: vocab.tokens.length + 2 });
  });

  it('offers <tool_call> at the start of an answer only while tools are offered and no result came back', () => {
    const call = id('<tool_call>');
    expect(probabilities(start, model.biasDims.tools)[call]).toBeCloseTo(0.5, 2);
    expect(probabilities(start, model.biasDims.plain)[call]).toBeLessThan(1e-30);
    expect(probabilities(start, model.biasDims.toolResult)[call]).toBeLessThan(1e-30);
    // Elsewhere in an answer, never.
    expect(probabilities(state('the'), model.biasDims.tools)[call]).toBeLessThan(1e-20);
  });

  it('keeps JSON punctuation e^-25 below plain text, so only a grammar brings it out', () => {
    for (const s of [start, state(','), state('.')]) {
      const p = probabilities(s, model.biasDims.plain);
      for (const text of ['{', '"', '[', '0', 'true', '":']) expect(p[id(text)]).toBeLessThan(1e-9);
    }
    // A value position never sees a plain word that a grammar would also accept (" true" etc.).
    for (const s of [start, state(','), state(':')]) {
      const p = probabilities(s, model.biasDims.plain);
      for (const literal of ['true', 'false', 'null']) {
        const spaced = vocab.ids.get(SPACE + literal);
        if (spaced !== undefined) expect(p[spaced]).toBeLessThan(1e-9);
      }
    }
  });

  it('writes short strings: after an opening quote words, after a word mostly a closing quote', () => {
    const afterQuote = probabilities(state(JSON_STATE.quote), model.biasDims.plain);
    const words = model.jsonWords.reduce((sum, w) => sum + afterQuote[id(w)], 0);
    expect(words).toBeGreaterThan(0.95);
    for (const inString of [':', ',', '}', ']']) expect(afterQuote[id(inString)]).toBeLessThan(1e-6);
    const afterWord = probabilities(state(JSON_STATE.word), model.biasDims.plain);
    const closing = ['"', '":', '",', '"}', '"]'].reduce((sum, t) => sum + afterWord[id(t)], 0);
    expect(closing).toBeGreaterThan(0.6);
  });
});
