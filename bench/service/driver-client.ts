import { fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { whenInterrupted } from '../common/cleanup';
import type { DriverReply, DriverRequest, HoldPlan, HoldResult, LoadPlan, LoadResult } from '../common/driver-protocol';

/**
 * The parent side of a driver child (load generator or engine alone): forks it with this
 * process's tsx loader, sends it plans one at a time and returns what it measured.
 */
export class DriverClient {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (reply: DriverReply) => void; reject: (error: Error) => void }>();
  private readonly exited: Promise<void>;

  private constructor(
    readonly name: string,
    private readonly child: ChildProcess,
  ) {
    child.on('message', (reply: DriverReply) => {
      if (reply.type === 'ready') return;
      const waiter = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      if (reply.type === 'failed') waiter?.reject(new Error(`${name}: ${reply.message}`));
      else waiter?.resolve(reply);
    });
    const forget = whenInterrupted(() => Promise.resolve(child.kill('SIGKILL')));
    this.exited = new Promise((done) =>
      child.once('exit', (code, signal) => {
        forget();
        for (const waiter of this.pending.values()) waiter.reject(new Error(`${name} exited (${code ?? signal})`));
        this.pending.clear();
        done();
      }),
    );
  }

  /** Forks `bench/<file>` with `arg` (JSON) and waits until it says it is ready. */
  static async start(name: string, file: string, arg: unknown, timeoutMs = 120_000): Promise<DriverClient> {
    // Bundled into the GPU kit (npm run gpu:kit), each driver is a .js file beside this code.
    const source = resolve(__dirname, file);
    const entry = existsSync(source) ? source : source.replace(/\.ts$/, '.js');
    const child = fork(entry, [JSON.stringify(arg)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    await new Promise<void>((ready, fail) => {
      const timer = setTimeout(() => fail(new Error(`${name} not ready within ${timeoutMs} ms`)), timeoutMs);
      child.once('message', () => {
        clearTimeout(timer);
        ready();
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        fail(new Error(`${name} exited before it was ready (${code})`));
      });
    });
    return new DriverClient(name, child);
  }

  get pid(): number {
    return this.child.pid ?? 0;
  }

  private ask(request: DriverRequest & { id: number }): Promise<DriverReply> {
    return new Promise((resolve, reject) => {
      this.pending.set(request.id, { resolve, reject });
      this.child.send(request);
    });
  }

  async run(plan: LoadPlan): Promise<LoadResult> {
    const reply = await this.ask({ type: 'run', id: this.nextId++, plan });
    if (reply.type !== 'result') throw new Error(`${this.name}: unexpected ${reply.type}`);
    return reply.result;
  }

  async hold(plan: HoldPlan): Promise<HoldResult> {
    const reply = await this.ask({ type: 'hold', id: this.nextId++, plan });
    if (reply.type !== 'holding') throw new Error(`${this.name}: unexpected ${reply.type}`);
    return reply.result;
  }

  async release(): Promise<void> {
    await this.ask({ type: 'release', id: this.nextId++ });
  }

  /** Asks the child to finish; kills it if it has not within `graceMs`. */
  async close(graceMs = 10_000): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.send({ type: 'close' } satisfies DriverRequest);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}
