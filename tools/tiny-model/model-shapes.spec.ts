import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readGguf } from './gguf-reader';
import { makeShapeModel, MODEL_SHAPES } from './model-shapes';
import { shapeVocabulary } from './shape-vocabulary';
import { SPACE, SPECIAL_TOKENS, TokenType } from './vocabulary';

describe('makeShapeModel', () => {
  const dir = mkdtempSync(join(tmpdir(), 'shape-model-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const shape = MODEL_SHAPES['test-tiny'];

  it('writes the shape: qwen2 metadata, every layer, q/k/v biases, output tied to the embeddings', () => {
    const out = join(dir, 'tiny.gguf');
    const result = makeShapeModel({ shape: 'test-tiny', type: 'f16', seed: 7, out });
    expect(result.bytes).toBe(statSync(out).size);
    const gguf = readGguf(readFileSync(out));
    expect(gguf.metadata.get('general.architecture')).toBe('qwen2');
    expect(gguf.metadata.get('qwen2.block_count')).toBe(shape.layers);
    expect(gguf.metadata.get('qwen2.attention.head_count_kv')).toBe(shape.kvHeads);
    expect((gguf.metadata.get('tokenizer.ggml.tokens') as string[]).length).toBe(shape.vocabulary);
    const names = gguf.tensors.map((tensor) => tensor.name);
    expect(names).toHaveLength(1 + shape.layers * 12 + 1);
    expect(names).not.toContain('output.weight');
    const kvWidth = (shape.embedding / shape.heads) * shape.kvHeads;
    expect(gguf.tensors.find((tensor) => tensor.name === 'blk.1.attn_k.weight')?.dims).toEqual([shape.embedding, kvWidth]);
    expect(gguf.tensors.find((tensor) => tensor.name === 'blk.1.ffn_down.weight')?.dims).toEqual([shape.feedForward, shape.embedding]);
    expect(result.parameters).toBe(gguf.tensors.reduce((sum, tensor) => sum + tensor.values.length, 0));

    const embeddings = gguf.tensors[0];
    const row = (token: number): Float32Array => embeddings.values.subarray(token * shape.embedding, (token + 1) * shape.embedding);
    // End-of-generation and other non-text tokens are never chosen: their (tied) output rows are zero.
    expect(row(SPECIAL_TOKENS.imEnd.id).every((value) => value === 0)).toBe(true);
    expect(row(SPECIAL_TOKENS.eos.id).every((value) => value === 0)).toBe(true);
    const text = row(shape.vocabulary - 1);
    const std = Math.sqrt(text.reduce((sum, value) => sum + value * value, 0) / text.length);
    expect(std).toBeGreaterThan(0.01);
    expect(std).toBeLessThan(0.04);
    expect(gguf.tensors.find((tensor) => tensor.name === 'blk.0.attn_norm.weight')?.values.every((value) => value === 1)).toBe(true);
  });

  it('gives the same bytes for a seed and others for another seed', () => {
    const bytes = (seed: number, name: string): Buffer => {
      makeShapeModel({ shape: 'test-tiny', type: 'f16', seed, out: join(dir, name) });
      return readFileSync(join(dir, name));
    };
    const first = bytes(3, 'a.gguf');
    expect(bytes(3, 'b.gguf').equals(first)).toBe(true);
    expect(bytes(4, 'c.gguf').equals(first)).toBe(false);
  });

  it('writes a reranker in Qwen3 layout: q/k norms, a two-label classifier head, rank pooling', () => {
    const out = join(dir, 'rank.gguf');
    makeShapeModel({ shape: 'test-tiny-qwen3', type: 'f16', seed: 1, pooling: 'rank', out });
    const gguf = readGguf(readFileSync(out));
    expect(gguf.metadata.get('general.architecture')).toBe('qwen3');
    expect(gguf.metadata.get('qwen3.pooling_type')).toBe(4);
    expect(gguf.metadata.get('qwen3.classifier.output_labels')).toEqual(['yes', 'no']);
    const headDim = shape.embedding / shape.heads;
    expect(gguf.tensors.find((tensor) => tensor.name === 'blk.0.attn_q_norm.weight')?.dims).toEqual([headDim]);
    expect(gguf.tensors.find((tensor) => tensor.name === 'cls.output.weight')?.dims).toEqual([shape.embedding, 2]);
    expect(() => makeShapeModel({ shape: 'test-tiny', type: 'f16', seed: 1, pooling: 'rank', out })).toThrow(/needs a Qwen3 shape/);
  });

  it('writes Q8_0 blocks: 34 bytes per 32 weights', () => {
    const f16 = makeShapeModel({ shape: 'test-tiny', type: 'f16', seed: 1, out: join(dir, 'f16.gguf') });
    const q8 = makeShapeModel({ shape: 'test-tiny', type: 'q8_0', seed: 1, out: join(dir, 'q8.gguf') });
    expect(q8.parameters).toBe(f16.parameters);
    expect(q8.bytes).toBeLessThan(f16.bytes * 0.65);
  });
});

describe('shapeVocabulary', () => {
  it('has the size asked for, distinct pieces whose prefixes come first, and silences all but text', () => {
    const vocabulary = shapeVocabulary(32_000);
    expect(vocabulary.tokens).toHaveLength(32_000);
    expect(new Set(vocabulary.tokens).size).toBe(32_000);
    const index = new Map(vocabulary.tokens.map((token, id) => [token, id]));
    const piece = `${SPACE}abc`;
    expect(index.get(`${SPACE}ab`)).toBeLessThan(index.get(piece) ?? -1);
    expect(vocabulary.silentTokens).toHaveLength(5 + 256);
    expect(vocabulary.silentTokens.every((id) => vocabulary.types[id] !== Number(TokenType.NORMAL))).toBe(true);
  });
});
