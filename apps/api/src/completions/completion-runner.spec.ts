import type { ApiEnv } from '@app/config';
import type { CompletionJobInput } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import type { Admission } from './completion-admission';
import type { CompletionEventBus } from './completion-event-bus';
import { CompletionRunner } from './completion-runner';
import type { CompletionSink } from './completion-sink';

/** The runner around stand-ins for the queue, the event bus and Redis: what it queues, cancels and gives back. */
function setUp() {
  const queue = { add: jest.fn(() => Promise.resolve()), remove: jest.fn(() => Promise.resolve(1)), getJobState: jest.fn(() => Promise.resolve('unknown')) };
  const admission = { queue, tokens: { settle: jest.fn(), refund: jest.fn() }, enqueued: jest.fn(), abandon: jest.fn() };
  const commands = { spublish: jest.fn(() => Promise.resolve(0)) };
  const events = { listen: () => () => undefined, replyTo: () => ({ channel: 'completion-replies:api-1', stopWhenUnheard: true }) };
  const runner = new CompletionRunner({ MAX_QUEUE_WAIT_MS: 30_000 } as ApiEnv, events as unknown as CompletionEventBus, commands as unknown as RedisClient);
  const sink: CompletionSink = { canRestart: false, write: () => undefined, restart: () => undefined };
  const job = { completionId: 'chatcmpl-1', model: 'm' } as CompletionJobInput;
  const gone = AbortSignal.abort();
  return { runner, admission, queue, commands, sink, job, gone };
}

describe('CompletionRunner', () => {
  it('does not queue the job of a client that left during admission, and gives back what admission took', async () => {
    const { runner, admission, queue, sink, job, gone } = setUp();
    await expect(runner.run(job, admission as unknown as Admission, sink, gone)).rejects.toMatchObject({ status: 499, code: 'client_closed' });
    expect(queue.add).not.toHaveBeenCalled();
    expect(admission.abandon).toHaveBeenCalledTimes(1);
  });

  it('queues a stored (detached) job all the same, and neither cancels it nor settles its tokens', async () => {
    const { runner, admission, queue, commands, sink, job, gone } = setUp();
    const detached = { stopWhenUnheard: false };
    await expect(runner.run(job, admission as unknown as Admission, sink, gone, detached)).rejects.toMatchObject({ code: 'client_closed' });
    expect(queue.add).toHaveBeenCalledTimes(1);
    const [name, data] = queue.add.mock.calls[0] as unknown as [string, { completionId: string; replyTo: { stopWhenUnheard: boolean } }];
    expect([name, data.completionId, data.replyTo.stopWhenUnheard]).toEqual(['chat-completion', 'chatcmpl-1', false]);
    expect(admission.abandon).not.toHaveBeenCalled();
    expect(queue.remove).not.toHaveBeenCalled();
    expect(commands.spublish).not.toHaveBeenCalled();
    expect(admission.tokens.settle).not.toHaveBeenCalled();
  });
});
