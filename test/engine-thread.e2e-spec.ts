import { resolve } from 'node:path';
import type { Worker } from 'node:worker_threads';
import type { OutputPart } from '@app/contracts';
import { ContextLengthExceededError, GenerationAbortedError, LlamaCppEngine, ThreadedEngine } from '@app/worker/engine';
import type { GenerationRequest, LlamaCppEngineOptions } from '@app/worker/engine';
import { REPO_ROOT } from '../tools/local-stack/services';

/** The built thread script: this spec runs TypeScript source, which a worker thread cannot load. */
const THREAD_ENTRY = resolve(REPO_ROOT, 'dist/apps/worker/apps/worker/src/engine/thread/llama-engine-thread.js');

const OPTIONS: Omit<LlamaCppEngineOptions, 'log'> = {
  modelPath: resolve(REPO_ROOT, 'models/tiny-chat.gguf'),
  parallelSequences: 2,
  threads: 1,
  contextSize: 512,
  gpu: 'false',
};

function request(maxTokens: number, signal = new AbortController().signal): GenerationRequest & { parts: OutputPart[] } {
  const parts: OutputPart[] = [];
  return {
    messages: [{ role: 'user', content: 'Tell me a story.' }],
    sampling: { temperature: 0, topP: 1, maxTokens, stop: [], frequencyPenalty: 0, presencePenalty: 0, seed: 7 },
    signal,
    output: { write: (part) => parts.push(part) },
    parts,
  };
}

const textOf = (parts: OutputPart[]): string => parts.map((part) => (part.type === 'text' ? part.text : '')).join('');

/**
 * The worker runs llama.cpp on a thread of its own (ThreadedEngine): the same engine, the same
 * answers and the same errors as in-process, and a thread that dies ends what ran on it.
 */
describe('llama.cpp on its own thread', () => {
  let threaded: ThreadedEngine;
  let inProcess: LlamaCppEngine;
  const logged: string[] = [];
  const lost = jest.fn<void, [Error]>();

  beforeAll(async () => {
    [threaded, inProcess] = await Promise.all([
      ThreadedEngine.startLlama(OPTIONS, { entry: THREAD_ENTRY, log: (message) => logged.push(message), onThreadLost: lost }),
      LlamaCppEngine.load(OPTIONS),
    ]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([threaded?.close(), inProcess?.close()]);
  });

  it('describes the engine it loaded and passes on what it logged', () => {
    expect({ name: threaded.name, slots: threaded.slots, contextSize: threaded.contextSize, capabilities: threaded.capabilities }).toEqual({
      name: inProcess.name,
      slots: inProcess.slots,
      contextSize: inProcess.contextSize,
      capabilities: inProcess.capabilities,
    });
    expect(logged).toEqual([expect.stringMatching(/^llama\.cpp backend cpu/)]);
  });

  it('streams the same answer, part by part, as the engine in-process', async () => {
    const [there, here] = [request(40), request(40)];
    const [outcome, expected] = await Promise.all([threaded.generate(there), inProcess.generate(here)]);
    expect(outcome).toEqual(expected);
    expect(outcome.usage.completion_tokens).toBe(40);
    expect(there.parts.length).toBeGreaterThan(1);
    expect(textOf(there.parts)).toBe(outcome.text);
  });

  it('runs as many generations at once as it has slots', async () => {
    const outcomes = await Promise.all([threaded.generate(request(20)), threaded.generate(request(30))]);
    expect(outcomes.map((outcome) => outcome.usage.completion_tokens)).toEqual([20, 30]);
  });

  it('stops a generation when its signal aborts, and frees its slot', async () => {
    const controller = new AbortController();
    // Aborted at its first output, as a client that leaves mid-answer.
    const generation = threaded.generate({ ...request(400, controller.signal), output: { write: () => controller.abort() } });
    await expect(generation).rejects.toBeInstanceOf(GenerationAbortedError);
    const already = new AbortController();
    already.abort();
    await expect(threaded.generate(request(10, already.signal))).rejects.toBeInstanceOf(GenerationAbortedError);
    await expect(Promise.all([threaded.generate(request(5)), threaded.generate(request(5))])).resolves.toHaveLength(2);
  });

  it("raises the engine's errors as their own classes, in the engine's words", async () => {
    const tooLong = request(OPTIONS.contextSize + 1);
    const expected = await inProcess.generate(request(OPTIONS.contextSize + 1)).catch((error: unknown) => error);
    expect(expected).toBeInstanceOf(ContextLengthExceededError);
    await expect(threaded.generate(tooLong)).rejects.toEqual(expected);
    await expect(threaded.generate(tooLong)).rejects.toBeInstanceOf(ContextLengthExceededError);
  });

  it("fails a start with the engine's own error when the model cannot load", async () => {
    const missing = { ...OPTIONS, modelPath: resolve(REPO_ROOT, 'models/no-such-model.gguf') };
    const expected = await LlamaCppEngine.load(missing).then(
      () => 'loaded',
      (error: Error) => error.message,
    );
    expect(expected).toContain('no-such-model.gguf');
    await expect(ThreadedEngine.startLlama(missing, { entry: THREAD_ENTRY })).rejects.toThrow(expected);
  });

  it('fails what was running, and every later generation, when an uncaught error ends its thread', async () => {
    const { thread } = threaded as unknown as { thread: Worker };
    const exited = new Promise<number>((resolve) => thread.once('exit', resolve));
    // As long an answer as the context holds, and the thread's first output waited for: llama.cpp is at work for it, hundreds of tokens from its end.
    const generation = request(OPTIONS.contextSize - 32);
    const running = threaded.generate(generation);
    for (let waited = 0; generation.parts.length === 0 && waited < 10_000; waited += 1) await new Promise<void>((resolve) => setTimeout(resolve, 1));
    // A command the thread cannot read: its message handler throws, and nothing there catches it.
    thread.postMessage(null);
    const failure = "the engine thread failed: Cannot read properties of null (reading 'type')";
    await expect(running).rejects.toThrow(failure);
    await expect(threaded.generate(request(5))).rejects.toThrow(failure);
    expect(lost).toHaveBeenCalledTimes(1);
    // It closed its engine before it exited: ending a thread while llama.cpp works for it aborts the process.
    await expect(exited).resolves.toBe(1);
  });
});
