/**
 * The llama.cpp engine's own thread (started by threaded-engine.ts): loads the model and runs
 * each generation it is sent, reporting output parts and outcomes back in batches, one message
 * per turn of this thread's event loop.
 */
import type { OutputPart } from '@app/contracts';
import { parentPort, workerData } from 'node:worker_threads';
import { LlamaCppEngine } from '../llama-cpp.engine';
import type { LlamaCppEngineOptions } from '../llama-cpp.engine';
import { describeError } from './engine-thread-protocol';
import type { EngineThreadCommand, EngineThreadReport, GenerationEvent, JobOutcome } from './engine-thread-protocol';

type JobCommand = Exclude<EngineThreadCommand, { type: 'abort' | 'close' }>;

if (!parentPort) throw new Error('llama-engine-thread runs only as a worker thread');
const port = parentPort;
const report = (message: EngineThreadReport): void => port.postMessage(message);

let outbox: GenerationEvent[] = [];

function flush(): void {
  if (outbox.length === 0) return;
  report({ type: 'events', events: outbox });
  outbox = [];
}

/** Output parts wait for the end of this turn; an outcome goes out at once, after them. */
function queue(event: GenerationEvent, now = false): void {
  outbox.push(event);
  if (now) flush();
  // The first event of an empty outbox schedules its flush (one already flushed finds nothing).
  else if (outbox.length === 1) setImmediate(flush);
}

/** Runs a job's command on the engine, its kind's method, its output parts to `write`. */
function run(engine: LlamaCppEngine, command: JobCommand, signal: AbortSignal, write: (part: OutputPart) => void): Promise<JobOutcome> {
  const output = { write };
  if (command.type === 'generate') return engine.generate({ ...command.request, signal, output });
  if (command.type === 'embed') return engine.embed({ ...command.request, signal, output });
  if (command.type === 'rank') return engine.rank({ ...command.request, signal, output });
  return engine.tokenize({ ...command.request, signal });
}

function serve(engine: LlamaCppEngine): void {
  const running = new Map<number, AbortController>();
  port.on('message', (command: EngineThreadCommand) => {
    if (command.type === 'abort') {
      running.get(command.id)?.abort();
    } else if (command.type !== 'close') {
      const { id } = command;
      const aborted = new AbortController();
      running.set(id, aborted);
      run(engine, command, aborted.signal, (part) => queue({ id, part }))
        .then(
          (outcome) => queue({ id, outcome }, true),
          (error: unknown) => queue({ id, error: describeError(error) }, true),
        )
        .finally(() => running.delete(id));
    } else {
      port.removeAllListeners('message');
      void engine.close().finally(() => report({ type: 'closed' }));
    }
  });
  report({ type: 'ready', engine: { name: engine.name, capabilities: engine.capabilities, slots: engine.slots, contextSize: engine.contextSize } });
}

const options = workerData as Omit<LlamaCppEngineOptions, 'log'>;
/** Set by an uncaught error (below): the thread is closing its engine to exit. */
let failing = false;
const loading = LlamaCppEngine.load({ ...options, log: (message) => report({ type: 'log', message }) });
// A thread that failed while loading does not serve: it is closing its engine to exit.
loading.then(
  (engine) => {
    if (!failing) serve(engine);
  },
  (error: unknown) => report({ type: 'load-failed', error: describeError(error) }),
);

/** How long a failing thread waits for llama.cpp to finish its work before it exits regardless. */
const CLOSE_BEFORE_EXIT_MS = 10_000;

/**
 * An uncaught error would end this thread at once, and Node ending a thread while llama.cpp still
 * works for it aborts the whole process (node-llama-cpp's addon throws when that work completes
 * into a stopped thread). So the thread says why it fails, closes the engine, which waits for
 * that work, and only then exits.
 */
process.on('uncaughtException', (error) => {
  if (failing) return;
  failing = true;
  port.removeAllListeners('message');
  report({ type: 'failed', error: describeError(error) });
  const closed = loading.then((engine) => engine.close()).catch(() => undefined);
  const waited = new Promise((resolve) => setTimeout(resolve, CLOSE_BEFORE_EXIT_MS));
  void Promise.race([closed, waited]).then(() => process.exit(1));
});
