/** How a pool's contexts are made. */
export interface ContextPoolOptions {
  /** Contexts, each evaluating one input at a time. */
  contexts: number;
  threads: number;
  contextSize: number;
}

/** A context that evaluates one input at a time and is disposed of at the end. */
interface PooledContext {
  dispose(): Promise<void>;
}

type Task<Context> = (context: Context) => Promise<void>;

/**
 * node-llama-cpp's embedding and ranking contexts evaluate one sequence each, so calls on one
 * context wait for each other. A pool holds several: every task of every job waits in one line
 * (first come, first served) for the next free context, and the contexts evaluate side by side.
 */
export class LlamaContextPool<Context extends PooledContext> {
  private readonly line: Array<Task<Context>> = [];
  private readonly idle: Context[];

  private constructor(readonly contexts: readonly Context[]) {
    this.idle = [...contexts];
  }

  /** `count` contexts from `make`; when one cannot be made, those made are disposed of. */
  static async create<Context extends PooledContext>(count: number, make: () => Promise<Context>): Promise<LlamaContextPool<Context>> {
    const contexts: Context[] = [];
    try {
      for (let made = 0; made < count; made++) contexts.push(await make());
    } catch (error) {
      await Promise.all(contexts.map((context) => context.dispose()));
      throw error;
    }
    return new LlamaContextPool(contexts);
  }

  /** Runs `task` on the next free context, after every task that was in line before it. */
  run<T>(task: (context: Context) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.line.push((context) => task(context).then(resolve, reject));
      this.next();
    });
  }

  async close(): Promise<void> {
    await Promise.all(this.contexts.map((context) => context.dispose()));
  }

  private next(): void {
    while (this.idle.length > 0 && this.line.length > 0) {
      const context = this.idle.pop()!;
      const task = this.line.shift()!;
      void task(context).finally(() => {
        this.idle.push(context);
        this.next();
      });
    }
  }
}
