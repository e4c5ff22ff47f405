import type { InferenceEngine } from '../engine/inference-engine';
import { GenerationAbortedError } from '../engine/inference-engine';

/** How long the self-test generation may take before the worker gives up on its engine. */
const SELF_TEST_TIMEOUT_MS = 60_000;

/**
 * Generates a few tokens and resolves once the first output comes; throws when the engine cannot
 * generate. The rest of the answer is not waited for: a slow engine, or the synthetic one with a
 * long token interval, would only delay the boot.
 */
export async function selfTest(engine: InferenceEngine): Promise<void> {
  const enough = new AbortController();
  let parts = 0;
  try {
    await engine.generate({
      messages: [{ role: 'user', content: 'Hello' }],
      sampling: { temperature: 0, topP: 1, maxTokens: 2, stop: [], frequencyPenalty: 0, presencePenalty: 0, seed: 1 },
      signal: AbortSignal.any([enough.signal, AbortSignal.timeout(SELF_TEST_TIMEOUT_MS)]),
      output: {
        write: () => {
          parts += 1;
          enough.abort();
        },
      },
    });
  } catch (error) {
    if (!(error instanceof GenerationAbortedError && parts > 0)) {
      throw new Error(`engine ${engine.name} could not generate: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  }
  if (parts === 0) throw new Error(`engine ${engine.name} could not generate: it gave no output`);
}
