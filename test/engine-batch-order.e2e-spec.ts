import { resolve } from 'node:path';
import type { LlamaContext, Token } from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import { orderBatchesBySequence } from '@app/worker/engine';
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
 * llama.cpp runs a batch as one pass through the model only for consecutive sequence ids in batch
 * order (see llama-batch-order.ts); node-llama-cpp builds the batch in the order the sequences asked.
 * Four sequences ask in the order 3, 1, 0, 2 within one tick, on the installed node-llama-cpp and
 * the real model: with the engine's ordering the batch reads 0, 1, 2, 3; without it, as asked.
 */
describe('decode batches in sequence-id order', () => {
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

  it('puts the sequences in id order with the ordering applied', async () => {
    const context = await createContext();
    expect(orderBatchesBySequence(context)).toBe(true);
    expect(await batchesAskedInOrder(context, [3, 1, 0, 2])).toEqual([[0, 1, 2, 3]]);
  });

  it('keeps the order they asked in without it (what the ordering changes)', async () => {
    const context = await createContext();
    expect(await batchesAskedInOrder(context, [3, 1, 0, 2])).toEqual([[3, 1, 0, 2]]);
  });
});
