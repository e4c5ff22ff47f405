import type { EngineCapabilities, OutputSink } from '@app/contracts';
import { extname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { engineCpuList, keepEngineOnCpus } from '../engine-cpus';
import type { LlamaCppEngineOptions } from '../llama-cpp.engine';
import type {
  EmbeddingOutcome,
  EmbeddingRequest,
  GenerationOutcome,
  GenerationRequest,
  InferenceEngine,
  RankOutcome,
  RankRequest,
  TokenizeOutcome,
  TokenizeRequest,
} from '../inference-engine';
import { reviveError } from './engine-thread-protocol';
import type { EngineDescription, EngineThreadCommand, EngineThreadReport, GenerationEvent, JobOutcome } from './engine-thread-protocol';

/** The thread's entry point, beside this file (`.js` in dist/, `.ts` when run through tsx). */
const LLAMA_THREAD_ENTRY = join(__dirname, `llama-engine-thread${extname(__filename)}`);
/** The thread's Linux name (at most 15 characters), as `top -H` and /proc show it. */
const ENGINE_THREAD = 'llama-engine';

interface Running {
  output: OutputSink;
  /** With the outcome of the job's kind, as the thread reported it. */
  resolve: (outcome: JobOutcome) => void;
  reject: (error: Error) => void;
}

export interface ThreadedEngineOptions {
  /** Where the engine says what it loaded. */
  log?: (message: string) => void;
  /** Called once if the thread stops on its own (an uncaught error there): the engine is gone for good. */
  onThreadLost?: (error: Error) => void;
  /** The thread's script; tests that run TypeScript source name the built one. */
  entry?: string;
  /** ENGINE_CPUS: a Linux CPU list to keep the engine's work on (engine-cpus.ts); anywhere when absent. */
  cpus?: string;
}

/**
 * The llama.cpp engine on a thread of its own. node-llama-cpp runs JavaScript for every token of
 * every sequence (sampling, detokenizing, its chat logic), and the next batch waits for it; on
 * the worker's main thread that work also waited behind publishing events and BullMQ's commands.
 * Here the main thread only relays: requests go over, output comes back once per turn of the
 * engine thread's event loop. A native abort still takes the whole process, as it always did.
 */
export class ThreadedEngine implements InferenceEngine {
  private nextId = 0;
  private readonly running = new Map<number, Running>();
  private lost: Error | undefined;
  /** Set once close() is under way: called when the thread has closed its engine (or died). */
  private closed: (() => void) | undefined;

  private constructor(
    private readonly thread: Worker,
    description: EngineDescription,
  ) {
    this.name = description.name;
    this.capabilities = description.capabilities;
    this.slots = description.slots;
    this.contextSize = description.contextSize;
  }

  readonly name: string;
  readonly capabilities: EngineCapabilities;
  readonly slots: number;
  readonly contextSize: number;

  /** Loads the model on a new thread; rejects with the engine's own error when it cannot. */
  static async startLlama(engineOptions: Omit<LlamaCppEngineOptions, 'log'>, options: ThreadedEngineOptions = {}): Promise<ThreadedEngine> {
    if (options.cpus) engineCpuList(options.cpus, engineOptions.threads);
    const thread = new Worker(options.entry ?? LLAMA_THREAD_ENTRY, { workerData: engineOptions, name: ENGINE_THREAD });
    const description = await new Promise<EngineDescription>((resolve, reject) => {
      let failure: Error | undefined;
      const settle = (done: () => void): void => {
        thread.off('message', onReport).off('error', onError).off('exit', onExit);
        done();
      };
      const onReport = (report: EngineThreadReport): void => {
        if (report.type === 'log') options.log?.(report.message);
        else if (report.type === 'ready') settle(() => resolve(report.engine));
        else if (report.type === 'load-failed') settle(() => reject(reviveError(report.error)));
        // The thread exits once llama.cpp has let go of it; ending it sooner could abort the process.
        else if (report.type === 'failed') failure = threadFailed(report.error);
      };
      const onError = (error: Error): void => settle(() => reject(error));
      const onExit = (code: number): void => settle(() => reject(failure ?? new Error(`the engine thread exited with code ${code} while loading`)));
      thread.on('message', onReport).on('error', onError).on('exit', onExit);
    }).catch(async (error: unknown) => {
      await thread.terminate();
      throw error;
    });
    const engine = new ThreadedEngine(thread, description);
    engine.listen(options);
    if (options.cpus) await engine.keepOnCpus(options.cpus, engineOptions.threads, options.log);
    return engine;
  }

  /**
   * Moves the engine's threads onto `cpus` (the pool's threads exist once the model has loaded),
   * and the main thread, which relays events to Redis and runs BullMQ, and V8's helpers off them.
   */
  private async keepOnCpus(cpus: string, threads: number, log: ThreadedEngineOptions['log']): Promise<void> {
    try {
      log?.(await keepEngineOnCpus({ cpus, threads, mainThreadElsewhere: true }));
    } catch (error) {
      await this.close();
      throw error;
    }
  }

  generate({ signal, output, ...request }: GenerationRequest): Promise<GenerationOutcome> {
    return this.run((id) => ({ type: 'generate', id, request }), signal, output) as Promise<GenerationOutcome>;
  }

  embed({ signal, output, ...request }: EmbeddingRequest): Promise<EmbeddingOutcome> {
    return this.run((id) => ({ type: 'embed', id, request }), signal, output) as Promise<EmbeddingOutcome>;
  }

  rank({ signal, output, ...request }: RankRequest): Promise<RankOutcome> {
    return this.run((id) => ({ type: 'rank', id, request }), signal, output) as Promise<RankOutcome>;
  }

  tokenize({ signal, ...request }: TokenizeRequest): Promise<TokenizeOutcome> {
    // A tokenize job writes no output parts: its outcome is its answer.
    return this.run((id) => ({ type: 'tokenize', id, request }), signal, { write: () => undefined }) as Promise<TokenizeOutcome>;
  }

  /** Sends a job's command to the thread and relays its output until its outcome comes back. */
  private run(command: (id: number) => EngineThreadCommand, signal: AbortSignal, output: OutputSink): Promise<JobOutcome> {
    if (this.lost) return Promise.reject(this.lost);
    const id = this.nextId++;
    const outcome = new Promise<JobOutcome>((resolve, reject) => this.running.set(id, { output, resolve, reject }));
    this.send(command(id));
    const abort = (): void => this.send({ type: 'abort', id });
    if (signal.aborted) abort();
    else signal.addEventListener('abort', abort, { once: true });
    return outcome.finally(() => signal.removeEventListener('abort', abort));
  }

  async close(): Promise<void> {
    if (this.lost || this.closed) return;
    await new Promise<void>((resolve) => {
      this.closed = resolve;
      this.send({ type: 'close' });
    });
    await this.thread.terminate();
  }

  private send(command: EngineThreadCommand): void {
    if (!this.lost) this.thread.postMessage(command);
  }

  private listen({ log, onThreadLost }: ThreadedEngineOptions): void {
    const stopped = (error: Error): void => {
      if (this.lost || this.closed) return;
      this.lost = error;
      for (const { reject } of this.running.values()) reject(error);
      this.running.clear();
      onThreadLost?.(error);
    };
    this.thread.on('message', (report: EngineThreadReport) => {
      if (report.type === 'events') report.events.forEach((event) => this.deliver(event));
      else if (report.type === 'log') log?.(report.message);
      else if (report.type === 'closed') this.closed?.();
      else if (report.type === 'failed') stopped(threadFailed(report.error));
    });
    this.thread.on('error', (error: Error) => stopped(threadFailed(error)));
    this.thread.on('exit', (code) => {
      this.closed?.(); // a thread that dies while closing has closed all the same
      stopped(new Error(`the engine thread exited with code ${code}`));
    });
  }

  private deliver(event: GenerationEvent): void {
    const running = this.running.get(event.id);
    if (!running) return;
    if ('part' in event) {
      running.output.write(event.part);
      return;
    }
    this.running.delete(event.id);
    if ('outcome' in event) running.resolve(event.outcome);
    else running.reject(reviveError(event.error));
  }
}

/** The error every generation of a thread that failed on its own ends with. */
function threadFailed({ message }: { message: string }): Error {
  return new Error(`the engine thread failed: ${message}`);
}
