/**
 * The engine alone: a child process that loads the worker's own engine class in-process, with
 * the options the worker would give it (or, for llama-server, starts the server as the worker
 * does and talks to it), and runs the same closed loop as the load generator.
 * Requests beyond the engine's slots wait their turn in order, as jobs wait in the queue, and
 * their time to first token counts from when they were issued.
 */
import { keepEngineOnCpus, LlamaCppEngine, LlamaServerProcess, readServerSentEvents, SyntheticEngine } from '@app/worker/engine';
import type { InferenceEngine } from '@app/worker/engine';
import { runClosedLoop } from '../common/closed-loop';
import type { EngineSpec, LoadPlan, LoadResult } from '../common/driver-protocol';
import { serveDriver } from './driver-host';
import { messagesFor, samplingFor } from '../common/workload';

/** First come, first served slots. */
class Slots {
  private readonly waiting: Array<() => void> = [];

  constructor(private free: number) {}

  /** Resolves with a slot, or false when `signal` aborted first (then no slot is held). */
  async acquire(signal: AbortSignal): Promise<boolean> {
    if (this.free > 0) {
      this.free -= 1;
      return true;
    }
    if (signal.aborted) return false;
    return new Promise<boolean>((resolve) => {
      const take = (): void => {
        signal.removeEventListener('abort', give);
        resolve(true);
      };
      const give = (): void => {
        this.waiting.splice(this.waiting.indexOf(take), 1);
        resolve(false);
      };
      this.waiting.push(take);
      signal.addEventListener('abort', give, { once: true });
    });
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free += 1;
  }
}

/** One answer: its completion tokens; `onContent` at each piece of text. */
type Answer = (index: number, maxTokens: number, onContent: () => void, signal: AbortSignal) => Promise<number>;

/**
 * llama.cpp's own server alone, as its users run it: started as the worker starts it (same slots,
 * context, threads, CPUs), each answer one streamed request to its own chat route.
 */
async function llamaServerAlone(spec: Extract<EngineSpec, { modelPath: string }>): Promise<{ answer: Answer; slots: number; close: () => Promise<void> }> {
  const server = await LlamaServerProcess.start({
    binary: process.env.LLAMA_SERVER_BIN ?? '',
    modelPath: spec.modelPath,
    slots: spec.parallelSequences,
    contextSize: spec.contextSize,
    threads: spec.threads,
    gpu: spec.gpu ?? 'false',
    cpus: spec.engineCpus,
    log: (message) => console.log(`engine alone: ${message}`),
    onLost: (error) => {
      console.error(error.message);
      process.exit(1);
    },
  });
  const answer: Answer = async (index, maxTokens, onContent, signal) => {
    const { temperature, topP, seed } = samplingFor(index, maxTokens);
    const response = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        messages: messagesFor(index),
        max_tokens: maxTokens,
        temperature,
        top_p: topP,
        seed,
        stream: true,
        stream_options: { include_usage: true },
      }),
      signal,
    });
    if (!response.ok || !response.body) throw new Error(`llama-server answered ${response.status}`);
    let tokens = 0;
    for await (const event of readServerSentEvents(response.body)) {
      if (event.data === '[DONE]') break;
      const chunk = JSON.parse(event.data) as { choices?: Array<{ delta?: { content?: string } }>; usage?: { completion_tokens: number } };
      if (chunk.choices?.[0]?.delta?.content) onContent();
      tokens = chunk.usage?.completion_tokens ?? tokens;
    }
    return tokens;
  };
  return { answer, slots: spec.parallelSequences, close: () => server.stop() };
}

/** The engine on the same backend the service's worker gets (its GPU variable, where `false` is the CPU). */
async function loadEngine(spec: EngineSpec): Promise<InferenceEngine> {
  if (spec.kind === 'synthetic') return new SyntheticEngine(spec);
  const log = (message: string): void => console.log(`engine alone: ${message}`);
  const engine = await LlamaCppEngine.load({ ...spec, gpu: spec.gpu ?? 'false', log });
  // In-process, the engine's JavaScript runs on the main thread: all of this process is the engine's
  // but V8's helpers, which keepEngineOnCpus puts off the engine's CPUs here as in the worker.
  if (spec.engineCpus) log(await keepEngineOnCpus({ cpus: spec.engineCpus, threads: spec.threads, mainThreadElsewhere: false }));
  return engine;
}

/** The worker's own engine class, in-process. */
async function inProcess(spec: EngineSpec): Promise<{ answer: Answer; slots: number; close: () => Promise<void> }> {
  const engine = await loadEngine(spec);
  const answer: Answer = async (index, maxTokens, onContent, signal) => {
    const outcome = await engine.generate({ messages: messagesFor(index), sampling: samplingFor(index, maxTokens), signal, output: { write: onContent } });
    return outcome.usage.completion_tokens;
  };
  return { answer, slots: engine.slots, close: () => engine.close() };
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '') as EngineSpec;
  const engine = spec.kind === 'llama-server' ? await llamaServerAlone(spec) : await inProcess(spec);
  const slots = new Slots(engine.slots);

  const run = (plan: LoadPlan): Promise<LoadResult> =>
    runClosedLoop(plan, async (index, meter, step, signal) => {
      if (!(await slots.acquire(signal))) throw new Error('abandoned while waiting for a slot');
      try {
        return await engine.answer(index, step.maxTokens, () => meter.content(), signal);
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
