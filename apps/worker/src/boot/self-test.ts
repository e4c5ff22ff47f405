import type { OutputSink } from '@app/contracts';
import type { InferenceEngine } from '../engine/inference-engine';
import { GenerationAbortedError } from '../engine/inference-engine';

/** How long the self-test of one kind may take before the worker gives up on its engine. */
const SELF_TEST_TIMEOUT_MS = 60_000;

/**
 * Runs each kind of job the engine announces once and resolves once the first output of each
 * comes; throws when the engine cannot. The rest of an answer is not waited for: a slow engine,
 * or the synthetic one with a long token interval, would only delay the boot.
 */
export async function selfTest(engine: InferenceEngine): Promise<void> {
  const { kinds } = engine.capabilities;
  if (kinds.includes('generate')) {
    await firstOutput(engine, 'generate', (signal, output) =>
      engine.generate({
        messages: [{ role: 'user', content: 'Hello' }],
        sampling: { temperature: 0, topP: 1, maxTokens: 2, stop: [], frequencyPenalty: 0, presencePenalty: 0, seed: 1 },
        signal,
        output,
      }),
    );
  }
  if (kinds.includes('embed')) await firstOutput(engine, 'embed', (signal, output) => engine.embed({ inputs: ['Hello'], signal, output }));
  if (kinds.includes('rank')) await firstOutput(engine, 'rank', (signal, output) => engine.rank({ query: 'Hello', documents: ['Hello'], signal, output }));
  if (kinds.includes('tokenize')) {
    const tokenized = await engine.tokenize({ of: 'text', text: 'Hello', specialTokens: false, signal: AbortSignal.timeout(SELF_TEST_TIMEOUT_MS) });
    if (!('tokens' in tokenized) || tokenized.tokens.length === 0) throw new Error(`engine ${engine.name} could not tokenize: it gave no tokens`);
  }
}

/** Runs one job and stops it at its first output part; an engine that writes none fails. */
async function firstOutput(engine: InferenceEngine, kind: string, run: (signal: AbortSignal, output: OutputSink) => Promise<unknown>): Promise<void> {
  const enough = new AbortController();
  let parts = 0;
  const output: OutputSink = {
    write: () => {
      parts += 1;
      enough.abort();
    },
  };
  try {
    await run(AbortSignal.any([enough.signal, AbortSignal.timeout(SELF_TEST_TIMEOUT_MS)]), output);
  } catch (error) {
    if (!(error instanceof GenerationAbortedError && parts > 0)) {
      throw new Error(`engine ${engine.name} could not ${kind}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  }
  if (parts === 0) throw new Error(`engine ${engine.name} could not ${kind}: it gave no output`);
}
