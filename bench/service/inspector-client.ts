/**
 * A minimal Chrome DevTools Protocol client for the API process's inspector (started with
 * `--inspect=127.0.0.1:0`): collect garbage, read process.memoryUsage(), CPU-profile a window.
 * It needs the global WebSocket (Node 22, or Node 20 with --experimental-websocket, which
 * `npm run bench` passes).
 */
export interface MemoryUsage {
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
}

/** V8's CPU profile format (what `node --cpu-prof` writes). */
export interface CpuProfile {
  nodes: Array<{
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
    hitCount?: number;
    children?: number[];
  }>;
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

interface CdpReply {
  id?: number;
  result?: unknown;
  error?: { message: string };
}

export class InspectorClient {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();

  private constructor(private readonly socket: WebSocket) {
    socket.addEventListener('message', (event: MessageEvent) => {
      const reply = JSON.parse(String(event.data)) as CdpReply;
      if (reply.id === undefined) return;
      const waiter = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      if (reply.error) waiter?.reject(new Error(reply.error.message));
      else waiter?.resolve(reply.result);
    });
    socket.addEventListener('close', () => {
      for (const waiter of this.pending.values()) waiter.reject(new Error('inspector connection closed'));
      this.pending.clear();
    });
  }

  /** The `ws://…` address a process prints as "Debugger listening on ws://…". */
  static inspectorUrlIn(output: string): string | undefined {
    return /Debugger listening on (ws:\/\/\S+)/.exec(output)?.[1];
  }

  static async connect(url: string): Promise<InspectorClient> {
    if (typeof WebSocket === 'undefined') throw new Error('no global WebSocket: run with Node 22, or Node 20 with --experimental-websocket');
    const socket = new WebSocket(url);
    await new Promise<void>((resolve, reject) => {
      socket.addEventListener('open', () => resolve(), { once: true });
      socket.addEventListener('error', () => reject(new Error(`cannot connect to the inspector at ${url}`)), { once: true });
    });
    return new InspectorClient(socket);
  }

  send<T>(method: string, params: object = {}): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: (value) => resolve(value as T), reject });
      this.socket.send(JSON.stringify({ id, method, params }));
    });
  }

  /** Memory after a full garbage collection, so that what remains is what is held. */
  async memoryAfterGc(): Promise<MemoryUsage> {
    await this.send('HeapProfiler.collectGarbage');
    await this.send('HeapProfiler.collectGarbage');
    const { result } = await this.send<{ result: { value: string } }>('Runtime.evaluate', {
      expression: 'JSON.stringify(process.memoryUsage())',
      returnByValue: true,
    });
    return JSON.parse(result.value) as MemoryUsage;
  }

  async startProfiling(samplingIntervalUs = 250): Promise<void> {
    await this.send('Profiler.enable');
    await this.send('Profiler.setSamplingInterval', { interval: samplingIntervalUs });
    await this.send('Profiler.start');
  }

  async stopProfiling(): Promise<CpuProfile> {
    const { profile } = await this.send<{ profile: CpuProfile }>('Profiler.stop');
    await this.send('Profiler.disable');
    return profile;
  }

  close(): void {
    this.socket.close();
  }
}
