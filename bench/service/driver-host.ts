import type { DriverReply, DriverRequest, HoldPlan, HoldResult, LoadPlan, LoadResult } from '../common/driver-protocol';

export interface DriverHandlers {
  run(plan: LoadPlan): Promise<LoadResult>;
  hold?(plan: HoldPlan): Promise<HoldResult>;
  release?(): Promise<void>;
  close(): Promise<void>;
}

function reply(message: DriverReply): void {
  process.send?.(message);
}

/** The child side of a driver: answers the parent's requests one at a time until `close`. */
export function serveDriver(handlers: DriverHandlers): void {
  if (!process.send) throw new Error('a benchmark driver runs as a child process with an IPC channel (bench/service/driver-client.ts)');
  process.on('message', (message: DriverRequest) => {
    void handle(handlers, message);
  });
  // Should the parent die, so does the driver.
  process.on('disconnect', () => process.exit(0));
  reply({ type: 'ready' });
}

async function handle(handlers: DriverHandlers, message: DriverRequest): Promise<void> {
  if (message.type === 'close') {
    await handlers.close();
    process.exit(0);
  }
  try {
    switch (message.type) {
      case 'run':
        reply({ type: 'result', id: message.id, result: await handlers.run(message.plan) });
        break;
      case 'hold':
        if (!handlers.hold) throw new Error('this driver cannot hold streams');
        reply({ type: 'holding', id: message.id, result: await handlers.hold(message.plan) });
        break;
      case 'release':
        await handlers.release?.();
        reply({ type: 'released', id: message.id });
        break;
    }
  } catch (error) {
    reply({ type: 'failed', id: message.id, message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  }
}
