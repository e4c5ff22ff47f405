/**
 * The engine alone: a child process that loads the worker's own engine class in-process, with
 * the options the worker would give it, and runs the same closed loop as the load generator.
 * Requests beyond the engine's slots wait their turn in order, as jobs wait in the queue, and
 * their time to first token counts from when they were issued.
 */
import { setMaxListeners } from 'node:events';
import { LlamaCppEngine } from '../apps/worker/src/engine/llama-cpp.engine';
import { SyntheticEngine } from '../apps/worker/src/engine/synthetic.engine';
import type { InferenceEngine } from '../apps/worker/src/engine/inference-engine';
import { runClosedLoop } from './closed-loop';
import type { EngineSpec, LoadPlan, LoadResult } from './driver-protocol';
import { serveDriver } from './driver-host';
import { messagesFor, samplingFor } from './workload';

/** First come, first served slots. */
class Slots {
  private readonly waiting: Array<() => void> = [];

  constructor(private free: number) {}

  async acquire(): Promise<void> {
    if (this.free > 0) {
      this.free -= 1;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free += 1;
  }
}

function loadEngine(spec: EngineSpec): Promise<InferenceEngine> {
  if (spec.kind === 'synthetic') return Promise.resolve(new SyntheticEngine(spec));
  return LlamaCppEngine.load({ ...spec, gpu: false });
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '') as EngineSpec;
  const engine = await loadEngine(spec);
  const slots = new Slots(engine.slots);
  const never = new AbortController().signal;
  // Every generation listens on this one signal.
  setMaxListeners(0, never);

  const run = (plan: LoadPlan): Promise<LoadResult> =>
    runClosedLoop(plan, async (index, meter, step) => {
      await slots.acquire();
      try {
        const outcome = await engine.generate({
          messages: messagesFor(index),
          sampling: samplingFor(index, step.maxTokens),
          signal: never,
          onText: () => meter.content(),
        });
        return outcome.usage.completion_tokens;
      } finally {
        slots.release();
      }
    });

  serveDriver({ run, close: () => engine.close() });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
