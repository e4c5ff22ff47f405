import { resolve } from 'node:path';
import { decodeVector } from '@app/contracts';
import type { OutputPart } from '@app/contracts';
import { ContextLengthExceededError, GenerationAbortedError, LlamaCppEngine, LlamaServerEngine, ThreadedEngine } from '@app/worker/engine';
import type { EmbeddingRequest, InferenceEngine, LlamaCppEngineOptions } from '@app/worker/engine';
import { REPO_ROOT } from '../tools/local-stack/services';

const THREAD_ENTRY = resolve(REPO_ROOT, 'dist/apps/worker/apps/worker/src/engine/thread/llama-engine-thread.js');

const EMBEDDING_MODEL: Omit<LlamaCppEngineOptions, 'log'> = {
  modelPath: resolve(REPO_ROOT, 'models/tiny-embed.gguf'),
  parallelSequences: 2,
  threads: 1,
  contextSize: 128,
  gpu: 'false',
  embeddingContexts: 3,
};

function embedding(inputs: EmbeddingRequest['inputs'], signal = new AbortController().signal): EmbeddingRequest & { vectors: Map<number, Float32Array> } {
  const vectors = new Map<number, Float32Array>();
  const write = (part: OutputPart): void => {
    if (part.type === 'embedding') vectors.set(part.index, decodeVector(part.vector));
  };
  return { inputs, signal, output: { write }, vectors };
}

const maxDifference = (a: Float32Array, b: Float32Array): number => Math.max(...Array.from(a, (value, index) => Math.abs(value - b[index])));

const TEXTS = Array.from({ length: 12 }, (_, index) => `the queen of hearts made ${index} tarts`);

/**
 * The llama engine's embeddings, in-process and on its thread: an embedding model announces only
 * `embed` (no chat context is made for it), its contexts give an input the same vector whichever
 * evaluates it and however many inputs wait, and a generative model embeds too with EMBEDDINGS.
 */
describe('llama.cpp embeddings', () => {
  let inProcess: LlamaCppEngine;
  let threaded: ThreadedEngine;

  beforeAll(async () => {
    [inProcess, threaded] = await Promise.all([LlamaCppEngine.load(EMBEDDING_MODEL), ThreadedEngine.startLlama(EMBEDDING_MODEL, { entry: THREAD_ENTRY })]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([inProcess?.close(), threaded?.close()]);
  });

  it('announces an embedding model as one that embeds and does not generate', async () => {
    expect(inProcess.capabilities).toMatchObject({ kinds: ['embed', 'tokenize'], tools: false, grammar: false, logprobs: false });
    expect(threaded.capabilities).toEqual(inProcess.capabilities);
    expect(inProcess.slots).toBe(2);
    expect(inProcess.contextSize).toBe(128);
    await expect(
      inProcess.generate({
        messages: [{ role: 'user', content: 'Hi' }],
        sampling: { temperature: 0, topP: 1, stop: [], frequencyPenalty: 0, presencePenalty: 0, seed: 1 },
        signal: new AbortController().signal,
        output: { write: () => undefined },
      }),
    ).rejects.toThrow('does not generate');
  });

  it('gives every input one vector, the same alone, among many and on the thread, and counts the tokens', async () => {
    const many = embedding(TEXTS);
    const outcome = await inProcess.embed(many);
    expect([...many.vectors.keys()].sort((a, b) => a - b)).toEqual(TEXTS.map((_, index) => index));
    expect(outcome.promptTokens).toBeGreaterThan(TEXTS.length * 4);
    const alone = embedding([TEXTS[7]]);
    const [threadedMany] = [embedding(TEXTS)];
    await Promise.all([inProcess.embed(alone), threaded.embed(threadedMany), inProcess.embed(embedding(TEXTS))]);
    expect(maxDifference(alone.vectors.get(0)!, many.vectors.get(7)!)).toBeLessThan(1e-5);
    for (const [index, vector] of many.vectors) expect(maxDifference(vector, threadedMany.vectors.get(index)!)).toBeLessThan(1e-5);
    expect(alone.vectors.get(0)).toHaveLength(64);
  });

  it('refuses an input longer than the context before evaluating any, and stops when aborted', async () => {
    const tooLong = embedding(['short', ' a'.repeat(200)]);
    await expect(inProcess.embed(tooLong)).rejects.toBeInstanceOf(ContextLengthExceededError);
    expect(tooLong.vectors.size).toBe(0);
    const aborted = new AbortController();
    aborted.abort();
    await expect(inProcess.embed(embedding(TEXTS, aborted.signal))).rejects.toThrow('aborted');
  });

  it('embeds with a generative model too when asked (EMBEDDINGS)', async () => {
    const chat = await LlamaCppEngine.load({ ...EMBEDDING_MODEL, modelPath: resolve(REPO_ROOT, 'models/tiny-chat.gguf'), embeddings: true });
    try {
      expect(chat.capabilities).toMatchObject({ kinds: ['generate', 'embed', 'tokenize'], tools: true });
      const request = embedding(['Alice was beginning to get very tired']);
      await chat.embed(request);
      expect(request.vectors.get(0)?.length).toBeGreaterThan(0);
    } finally {
      await chat.close();
    }
  });
});

/**
 * ENGINE=llama-server with an embedding model: llama.cpp's own server started with `--embeddings`
 * (the binary `npm run llama-server:build` makes), fed the tokens the llama engine would evaluate;
 * the same vectors and counts as the llama engine, in one request for a job's inputs.
 */
describe('llama-server embeddings', () => {
  let reference: LlamaCppEngine;
  let served: InferenceEngine;

  beforeAll(async () => {
    reference = await LlamaCppEngine.load(EMBEDDING_MODEL);
    served = await LlamaServerEngine.start({
      modelPath: EMBEDDING_MODEL.modelPath,
      slots: 2,
      contextSize: 128,
      threads: 1,
      gpu: 'false',
      binary: '',
      url: '',
      log: () => undefined,
      onLost: (error) => console.error(error),
    });
  }, 120_000);

  afterAll(async () => {
    await Promise.all([reference?.close(), served?.close()]);
  });

  it('announces an embedding model as one that embeds, with the context and slots it was started with', () => {
    expect(served.capabilities).toEqual(reference.capabilities);
    expect([served.contextSize, served.slots]).toEqual([128, 2]);
  });

  it("gives every input the llama engine's vector, text and token ids alike, and counts the same tokens", async () => {
    // Of mixed lengths, evaluated together on the server's slots (where its own mean pooling mixes them up).
    const mixed = Array.from({ length: 8 }, (_, index) => Array.from({ length: 3 * (1 + (index % 5)) }, (_, at) => 300 + index + at));
    const inputs = [...TEXTS, ...mixed, 'Alice'];
    const [ours, theirs] = [embedding(inputs), embedding(inputs)];
    const [servedOutcome, referenceOutcome] = await Promise.all([served.embed(ours), reference.embed(theirs)]);
    expect(servedOutcome.promptTokens).toBe(referenceOutcome.promptTokens);
    expect(ours.vectors.size).toBe(inputs.length);
    for (const [index, vector] of theirs.vectors) expect(maxDifference(vector, ours.vectors.get(index)!)).toBeLessThan(1e-4);
  });

  it('refuses an input longer than the context before evaluating any, and stops when aborted', async () => {
    const tooLong = embedding(['short', ' a'.repeat(200)]);
    await expect(served.embed(tooLong)).rejects.toBeInstanceOf(ContextLengthExceededError);
    expect(tooLong.vectors.size).toBe(0);
    const aborted = new AbortController();
    aborted.abort();
    await expect(served.embed(embedding(TEXTS, aborted.signal))).rejects.toBeInstanceOf(GenerationAbortedError);
  });
});
