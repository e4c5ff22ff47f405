import { resolve } from 'node:path';
import type { LlamaContext, LlamaContextSequence, Token } from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import { shareDecodeSteps } from '@app/worker/engine';
import { REPO_ROOT } from '../tools/local-stack/services';

/** node-llama-cpp's addon context: each decode step's batch is built by these calls. */
interface AddonContext {
  initBatch(size: number): unknown;
  addToBatch(sequenceId: number, ...rest: unknown[]): unknown;
}

/** Records the sequence ids of every batch the context builds, in the order they enter it. */
function recordBatches(context: LlamaContext): number[][] {
  const addon = (context as unknown as { _ctx: AddonContext })._ctx;
  const batches: number[][] = [];
  const initBatch = addon.initBatch.bind(addon);
  const addToBatch = addon.addToBatch.bind(addon);
  Object.defineProperty(addon, 'initBatch', {
    value: (size: number) => {
      batches.push([]);
      return initBatch(size);
    },
  });
  Object.defineProperty(addon, 'addToBatch', {
    value: (sequenceId: number, ...rest: unknown[]) => {
      batches.at(-1)?.push(sequenceId);
      return addToBatch(sequenceId, ...rest);
    },
  });
  return batches;
}

/** Generates `count` tokens on `sequence` (end-of-text included), calling `onToken` after each. */
async function generate(sequence: LlamaContextSequence, prompt: Token[], count: number, onToken?: (index: number) => void): Promise<void> {
  const generator = sequence.evaluate(prompt, { yieldEogToken: true });
  for (let index = 0; index < count; index++) {
    await generator.next();
    onToken?.(index);
  }
  await generator.return();
}

/**
 * The engine's batching (llama-batching.ts) on the installed node-llama-cpp and a real model: llama.cpp
 * makes one pass through the model per run of consecutive sequence ids in batch order, so the
 * answers generating at once should share each step, in id order, and a sequence that must erase
 * its old state should not wait for the others to end. Each case also runs without it.
 */
describe('decode steps shared by the sequences generating at once', () => {
  let dispose: () => Promise<void>;
  let createContext: () => Promise<LlamaContext>;
  let tokens: Token[];

  beforeAll(async () => {
    const { getLlama } = await import('node-llama-cpp');
    const llama = await getLlama({ gpu: false, build: 'never', maxThreads: 1 });
    const model = await llama.loadModel({ modelPath: resolve(REPO_ROOT, 'models/tiny-chat.gguf') });
    tokens = model.tokenize('Tell me a story.');
    createContext = () => model.createContext({ sequences: 4, contextSize: 256, threads: 1 });
    dispose = async () => {
      await model.dispose();
      await llama.dispose();
    };
  }, 60_000);

  afterAll(async () => {
    await dispose?.();
  });

  /** Runs `scenario` on four sequences of a new context (ids 0-3), shared or as node-llama-cpp ships them; returns its batches. */
  async function batchesOf<T>(shared: boolean, scenario: (sequences: LlamaContextSequence[], batches: number[][]) => Promise<T>) {
    const context = await createContext();
    try {
      const sequences = Array.from({ length: 4 }, () => context.getSequence());
      if (shared) expect(shareDecodeSteps(context, sequences)).toBe(true);
      const batches = recordBatches(context);
      const outcome = await scenario(sequences, batches);
      return { batches, outcome };
    } finally {
      await context.dispose();
    }
  }

  /** Four sequences ask in the order 3, 1, 0, 2 within one turn of the event loop. */
  const askInOrder = (sequences: LlamaContextSequence[]) => Promise.all([3, 1, 0, 2].map((id) => sequences[id].evaluateWithoutGeneratingNewTokens(tokens)));

  it('puts the sequences in id order', async () => {
    expect((await batchesOf(true, askInOrder)).batches).toEqual([[0, 1, 2, 3]]);
    expect((await batchesOf(false, askInOrder)).batches).toEqual([[3, 1, 0, 2]]);
  });

  /** Sequences 0-2 generate 12 tokens each; sequence 3 starts once sequence 0 has its second and generates 6. */
  const lateStart = async (sequences: LlamaContextSequence[]) => {
    let late: Promise<void> | undefined;
    await Promise.all([
      generate(sequences[0], tokens, 12, (index) => {
        if (index === 1) late = generate(sequences[3], tokens, 6);
      }),
      generate(sequences[1], tokens, 12),
      generate(sequences[2], tokens, 12),
    ]);
    await late;
  };

  it('runs a sequence that starts late in the same steps as the others', async () => {
    const all = [0, 1, 2, 3];
    const early = [0, 1, 2];
    const steps = (count: number, ids: number[]) => Array.from({ length: count }, () => ids);
    // Two steps of the first three; sequence 3's prompt joins the third step, its 6 tokens run
    // with the others' (the sixth is not decoded); then the first three's last four.
    expect((await batchesOf(true, lateStart)).batches).toEqual([...steps(2, early), ...steps(6, all), ...steps(4, early)]);
    // As shipped: more steps, and out of id order.
    const { batches } = await batchesOf(false, lateStart);
    expect(batches.length).toBeGreaterThan(12);
    expect(batches.some((ids) => ids.some((id, index) => index > 0 && id < ids[index - 1]))).toBe(true);
  });

  /**
   * Sequences 0-2 generate 40 tokens each. Sequence 3 holds an old prompt; once sequence 0 has its
   * fifth token it erases it (under the context's lock, as a new job's sequence clears another
   * conversation). Returns how many batches ran while it waited.
   */
  const eraseMidway = async (sequences: LlamaContextSequence[], batches: number[][]): Promise<number> => {
    await sequences[3].evaluateWithoutGeneratingNewTokens(tokens);
    let erased: Promise<number> | undefined;
    await Promise.all([
      generate(sequences[0], tokens, 40, (index) => {
        if (index !== 4) return;
        const before = batches.length;
        erased = sequences[3].eraseContextTokenRanges([{ start: 0, end: sequences[3].nextTokenIndex }]).then(() => batches.length - before);
      }),
      generate(sequences[1], tokens, 40),
      generate(sequences[2], tokens, 40),
    ]);
    return (await erased) ?? Number.NaN;
  };

  it('lets a sequence erase its old state within a step while the others generate', async () => {
    expect((await batchesOf(true, eraseMidway)).outcome).toBeLessThanOrEqual(1);
    // As shipped it waits until the others have ended (35 of their 40 steps).
    expect((await batchesOf(false, eraseMidway)).outcome).toBeGreaterThan(30);
  });
});
