/**
 * `npm run bench:decode-batches -- [--model-path=models/llama-50m-f16.gguf] [--gpu=false] [--levels=1,8,32]
 *   [--max-tokens=64] [--sequences=32] [--threads=1] [--batching=shared,plain] [--arrivals=together]
 *   [--out=bench/results/decode-batches.json]`
 *
 * Where the engine's own time goes when several answers generate at once. On an H100 the engine
 * alone made 378 tokens/s with one stream and 275-403 with 8-32 (issue 36): the GPU was not the
 * limit, so something on the host was. The worker's llama.cpp engine runs in this process, and at
 * each level `level` answers generate at once (greedy, `max-tokens` each) while every llama.cpp
 * decode call and every token sampling of node-llama-cpp's addon context is timed. Per level:
 * tokens/s, decode calls and tokens per call (mean and histogram), time per decode call, time
 * per sampling, and the share of the wall time spent inside decode calls (they run one at a
 * time, under the context's lock): what is left is the host's work between decodes. Also how many
 * passes through the model llama.cpp makes of each answer step: one per run of consecutive
 * sequence ids in batch order (see apps/worker/src/engine/llama-batching.ts). Each level runs
 * with the engine's batching and with node-llama-cpp's as shipped, so one run shows what the
 * engine's is worth on that machine.
 * `--arrivals=staggered` runs each level as traffic comes: every stream asks for four answers of
 * different lengths one after another, after a burst that used every sequence, so jobs start
 * while others generate and land on whichever sequences are idle then.
 * The GPU kit's run.sh runs it after the benchmark; `--gpu=cuda` there.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { LlamaCppEngine, plainDecodeSteps, shareDecodeSteps } from '@app/worker/engine';
import type { LlamaContext, LlamaContextSequence } from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import type { ChatMessage } from '@app/contracts';
import type { LlamaCppEngineOptions } from '@app/worker/engine';
import { optionValue, numberOption } from '../common/command-line';
import { messagesFor, samplingFor } from '../common/workload';
import { round } from '../common/stats';

const MODEL_PATH = optionValue('model-path') ?? 'models/llama-50m-f16.gguf';
const GPU = (optionValue('gpu') ?? 'false') as LlamaCppEngineOptions['gpu'];
const LEVELS = (optionValue('levels') ?? '1,8,32').split(',').map(Number);
const MAX_TOKENS = numberOption('max-tokens', 64);
const SEQUENCES = numberOption('sequences', 32);
const THREADS = numberOption('threads', 1);
/** Batchings to compare: the engine's (shared) and node-llama-cpp's as shipped (plain). */
const BATCHINGS = (optionValue('batching') ?? 'shared,plain').split(',') as Batching[];
const STAGGERED = (optionValue('arrivals') ?? 'together') === 'staggered';
/** With staggered arrivals: the answers each stream asks for, one after another. */
const ANSWERS_PER_STREAM = 4;
const OUT = resolve(optionValue('out') ?? 'bench/results/decode-batches.json');

/** The calls of node-llama-cpp's addon context this bench times (internal to node-llama-cpp 3.x). */
interface AddonContext {
  initBatch(size: number): unknown;
  addToBatch(sequenceId: number, ...rest: unknown[]): unknown;
  decodeBatch(): Promise<unknown>;
  sampleToken(...args: unknown[]): Promise<unknown>;
}

/** The ubatches llama.cpp's split_equal(sequential) cuts a batch into: each takes ids that follow on from the last. */
function llamaPasses(sequenceIds: readonly number[]): number {
  const taken = sequenceIds.map(() => false);
  let passes = 0;
  for (let left = sequenceIds.length; left > 0; passes++) {
    let last: number | undefined;
    sequenceIds.forEach((id, index) => {
      if (taken[index] || (last !== undefined && id !== last + 1)) return;
      taken[index] = true;
      last = id;
      left--;
    });
  }
  return passes;
}

class CallTimes {
  /** Each batch: its tokens, and the sequence ids in the order they entered it. */
  batches: Array<{ size: number; sequenceIds: number[] }> = [];
  decodeMs = 0;
  samples = 0;
  sampleMs = 0;

  /** Wraps the context's calls (napi methods are read-only on the prototype, so each is defined on the object). */
  static attach(context: AddonContext): CallTimes {
    const times = new CallTimes();
    const initBatch = context.initBatch.bind(context);
    const addToBatch = context.addToBatch.bind(context);
    const decodeBatch = context.decodeBatch.bind(context);
    const sampleToken = context.sampleToken.bind(context);
    Object.defineProperty(context, 'initBatch', {
      value: (size: number) => {
        times.batches.push({ size, sequenceIds: [] });
        return initBatch(size);
      },
    });
    Object.defineProperty(context, 'addToBatch', {
      value: (sequenceId: number, ...rest: unknown[]) => {
        times.batches.at(-1)?.sequenceIds.push(sequenceId);
        return addToBatch(sequenceId, ...rest);
      },
    });
    Object.defineProperty(context, 'decodeBatch', {
      value: async () => {
        const started = performance.now();
        try {
          return await decodeBatch();
        } finally {
          times.decodeMs += performance.now() - started;
        }
      },
    });
    Object.defineProperty(context, 'sampleToken', {
      value: async (...args: unknown[]) => {
        const started = performance.now();
        try {
          return await sampleToken(...args);
        } finally {
          times.sampleMs += performance.now() - started;
          times.samples += 1;
        }
      },
    });
    return times;
  }

  reset(): void {
    this.batches = [];
    this.decodeMs = 0;
    this.samples = 0;
    this.sampleMs = 0;
  }
}

/** The engine's batching (shareDecodeSteps) or node-llama-cpp's as shipped. */
type Batching = 'shared' | 'plain';

/** The engine's node-llama-cpp context: private on both sides, reached on purpose for this measurement. */
function contextOf(engine: LlamaCppEngine): LlamaContext & { _ctx: AddonContext } {
  return (engine as unknown as { context: LlamaContext & { _ctx: AddonContext } }).context;
}

/** The engine's sequences (each serves a free and a forced-call LlamaChat). */
function sequencesOf(engine: LlamaCppEngine): LlamaContextSequence[] {
  return (engine as unknown as { idleChats: Array<{ free: { sequence: LlamaContextSequence } }> }).idleChats.map(({ free }) => free.sequence);
}

/** Between levels (nothing queued) the context and its sequences batch as node-llama-cpp ships them, or as the engine does if asked. */
function useBatching(engine: LlamaCppEngine, batching: Batching): void {
  const context = contextOf(engine);
  const sequences = sequencesOf(engine);
  plainDecodeSteps(context, sequences);
  if (batching === 'shared' && !shareDecodeSteps(context, sequences)) {
    throw new Error('node-llama-cpp changed inside: cannot share its decode steps');
  }
}

/**
 * The index-th prompt made new from its first word, as from users of their own: it shares no more
 * with any sequence than the chat template's start.
 */
function newFromItsFirstWord(index: number): ChatMessage[] {
  return messagesFor(index).map((message) => ({ ...message, content: `Request ${index}: ${String(message.content)}` }));
}

/** One answer of `maxTokens` at most to the index-th prompt; resolves to the tokens it made. */
async function answer(engine: LlamaCppEngine, index: number, maxTokens: number): Promise<number> {
  const outcome = await engine.generate({
    messages: STAGGERED ? newFromItsFirstWord(index) : messagesFor(index),
    sampling: samplingFor(index, maxTokens),
    signal: new AbortController().signal,
    output: { write: () => undefined },
  });
  return outcome.usage.completion_tokens;
}

/** Each stream's answers: one of MAX_TOKENS, or (staggered) several of lengths from half to all of it. */
async function stream(engine: LlamaCppEngine, index: number): Promise<number> {
  if (!STAGGERED) return answer(engine, index, MAX_TOKENS);
  let tokens = 0;
  for (let round = 0; round < ANSWERS_PER_STREAM; round++) {
    const share = 0.5 + ((index * 5 + round * 3) % 8) / 16;
    tokens += await answer(engine, index * ANSWERS_PER_STREAM + round, Math.round(MAX_TOKENS * share));
  }
  return tokens;
}

async function runLevel(engine: LlamaCppEngine, times: CallTimes, streams: number, offset: number) {
  times.reset();
  const started = performance.now();
  const produced = await Promise.all(Array.from({ length: streams }, (_, index) => stream(engine, offset + index)));
  const wallMs = performance.now() - started;
  const tokens = produced.reduce((sum, count) => sum + count, 0);
  // Prompt batches carry many tokens at once; the answer's steps carry at most one per stream.
  const steps = times.batches.filter(({ size }) => size <= streams);
  const passes = steps.reduce((sum, { sequenceIds }) => sum + llamaPasses(sequenceIds), 0);
  const histogram: Record<string, number> = {};
  for (const { size } of steps) histogram[size] = (histogram[size] ?? 0) + 1;
  return {
    streams,
    tokens,
    seconds: round(wallMs / 1000, 2),
    tokensPerSecond: round(tokens / (wallMs / 1000), 1),
    decodeCalls: times.batches.length,
    tokensPerGenerationDecode: round(steps.reduce((sum, { size }) => sum + size, 0) / Math.max(1, steps.length), 2),
    generationDecodeSizes: histogram,
    llamaPassesPerAnswerStep: round(passes / Math.max(1, steps.length), 2),
    msPerDecodeCall: round(times.decodeMs / Math.max(1, times.batches.length), 3),
    msPerSampling: round(times.sampleMs / Math.max(1, times.samples), 3),
    decodeShareOfWall: round(times.decodeMs / wallMs, 3),
  };
}

async function main(): Promise<void> {
  const engine = await LlamaCppEngine.load({
    modelPath: resolve(MODEL_PATH),
    gpu: GPU,
    parallelSequences: SEQUENCES,
    threads: THREADS,
    contextSize: 4096,
    log: (message) => console.log(`decode-batches: ${message}`),
  });
  const times = CallTimes.attach(contextOf(engine)._ctx);
  const levels = [];
  try {
    for (const [index, streams] of LEVELS.entries()) {
      // Warm-up: first use of the sequences, or (staggered) a burst over all of them.
      await runLevel(engine, times, STAGGERED ? SEQUENCES : streams, 1000 * index);
      for (const [run, batching] of BATCHINGS.entries()) {
        useBatching(engine, batching);
        // Prompts of their own: the prompt cache would spare a later run the prompts an earlier one evaluated.
        const level = { batching, ...(await runLevel(engine, times, streams, 1000 * index + 100 * (run + 1))) };
        levels.push(level);
        console.log(
          `c=${streams}, ${batching} batching: ${level.tokensPerSecond} tok/s; ${level.decodeCalls} decodes, ${level.tokensPerGenerationDecode} tokens and ${level.llamaPassesPerAnswerStep} llama.cpp passes per answer step; ` +
            `${level.msPerDecodeCall} ms per decode, ${level.msPerSampling} ms per sampling; decode ${(level.decodeShareOfWall * 100).toFixed(0)}% of the wall time`,
        );
      }
    }
  } finally {
    await engine.close();
  }
  mkdirSync(dirname(OUT), { recursive: true });
  writeFileSync(
    OUT,
    `${JSON.stringify({ modelPath: MODEL_PATH, gpu: GPU, sequences: SEQUENCES, threads: THREADS, maxTokens: MAX_TOKENS, arrivals: STAGGERED ? 'staggered' : 'together', batchings: BATCHINGS, levels }, null, 2)}\n`,
  );
  console.log(`wrote ${OUT}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
