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

/**
 * The engine's batching (llama-batching.ts) on the installed node-llama-cpp and a real model: llama.cpp
 * makes one pass through the model per run of consecutive sequence ids in batch order, so the
 * answers generating at once should share each step, in id order. Each case also runs without it.
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

  async function batchesAskedInOrder(context: LlamaContext, order: number[]): Promise<number[][]> {
    // A new context hands out ids 0, 1, 2, 3 in turn.
    const sequences = Array.from({ length: 4 }, () => context.getSequence());
    const batches = recordBatches(context);
    await Promise.all(order.map((id) => sequences[id].evaluateWithoutGeneratingNewTokens(tokens)));
    await context.dispose();
    return batches;
  }

  // Four sequences ask in the order 3, 1, 0, 2 within one turn of the event loop.
  it('puts the sequences in id order', async () => {
    const context = await createContext();
    expect(shareDecodeSteps(context)).toBe(true);
    expect(await batchesAskedInOrder(context, [3, 1, 0, 2])).toEqual([[0, 1, 2, 3]]);
  });

  it('keeps the order they asked in without it', async () => {
    const context = await createContext();
    expect(await batchesAskedInOrder(context, [3, 1, 0, 2])).toEqual([[3, 1, 0, 2]]);
  });

  /** Sequences 0-2 generate 12 tokens each; sequence 3 starts once sequence 0 has its second and generates 6. */
  async function batchesWithALateStart(context: LlamaContext): Promise<number[][]> {
    const sequences = Array.from({ length: 4 }, () => context.getSequence());
    const batches = recordBatches(context);
    const generate = async (sequence: LlamaContextSequence, count: number, onToken?: (index: number) => void) => {
      const generator = sequence.evaluate(tokens, { yieldEogToken: true });
      for (let index = 0; index < count; index++) {
        await generator.next();
        onToken?.(index);
      }
      await generator.return();
    };
    let late: Promise<void> | undefined;
    await Promise.all([
      generate(sequences[0], 12, (index) => {
        if (index === 1) late = generate(sequences[3], 6);
      }),
      generate(sequences[1], 12),
      generate(sequences[2], 12),
    ]);
    await late;
    await context.dispose();
    return batches;
  }

  it('runs a sequence that starts late in the same steps as the others, in id order', async () => {
    const context = await createContext();
    expect(shareDecodeSteps(context)).toBe(true);
    const all = [0, 1, 2, 3];
    const early = [0, 1, 2];
    // Two steps of the first three; sequence 3's prompt joins the third step, its 6 tokens run
    // with the others' (the sixth is not decoded); then the first three's last four.
    const steps = (count: number, ids: number[]) => Array.from({ length: count }, () => ids);
    expect(await batchesWithALateStart(context)).toEqual([...steps(2, early), ...steps(6, all), ...steps(4, early)]);
  });

  it('takes more steps, out of id order, without it', async () => {
    const batches = await batchesWithALateStart(await createContext());
    expect(batches.length).toBeGreaterThan(12);
    expect(batches.some((ids) => ids.some((id, index) => index > 0 && id < ids[index - 1]))).toBe(true);
  });
});
