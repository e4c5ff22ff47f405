import { resolve } from 'node:path';
import { REPO_ROOT } from '../../tools/local-stack/services';

/** How node-llama-cpp fills in the middle on its own, greedily, as a user of it would call it: the reference for either engine. */
export async function engineInfill(modelName: string, prefix: string, suffix: string, maxTokens: number): Promise<string> {
  const { getLlama, LlamaCompletion } = await import('node-llama-cpp');
  const llama = await getLlama({ gpu: false, build: 'never' });
  try {
    const model = await llama.loadModel({ modelPath: resolve(REPO_ROOT, `models/${modelName}.gguf`) });
    const context = await model.createContext({ contextSize: 512 });
    return await new LlamaCompletion({ contextSequence: context.getSequence() }).generateInfillCompletion(prefix, suffix, { maxTokens, temperature: 0 });
  } finally {
    await llama.dispose();
  }
}
