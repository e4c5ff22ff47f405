import type { ApiEnv } from '@app/config';
import type { CompletionJobInput } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import type { ModelRegistry } from '../models/model-registry';
import type { ApiMetrics } from '../observability/api-metrics';
import type { AffinityLookup } from './affinity-lookup';
import { AffinityPlacement } from './affinity-placement';
import type { Admission } from './completion-admission';
import type { CompletionEventBus } from './completion-event-bus';
import type { CompletionQueues } from './completion-queues';
import { CompletionRunner } from './completion-runner';
import type { ExpressLane } from './express-lane';
import type { CompletionSink } from './completion-sink';
import type { WaitingLimit } from './waiting-limit';

/**
 * The runner around stand-ins for the queue, its waiting limit, the event bus and Redis: what it
 * queues, cancels and gives back. `added` is what the limited add answers.
 */
function setUp(added: Promise<boolean> = Promise.resolve(true)) {
  const queue = { remove: jest.fn(() => Promise.resolve(1)), getJobState: jest.fn(() => Promise.resolve('unknown')) };
  const waitingLimit = { add: jest.fn(() => added) };
  const admission = {
    queue,
    tokens: { settle: jest.fn(), refund: jest.fn() },
    fairShare: { jobOptions: {}, express: false, onEvent: jest.fn(), release: jest.fn() },
    abandon: jest.fn(),
  };
  const commands = { spublish: jest.fn(() => Promise.resolve(0)) };
  const events = { listen: () => () => undefined, replyTo: () => ({ channel: 'completion-replies:api-1', stopWhenUnheard: true }) };
  const env = { MAX_QUEUE_WAIT_MS: 30_000, MAX_WAITING_JOBS: 7, AFFINITY: false } as ApiEnv;
  // Affinity off: every job goes to the model's shared queue through the waiting limit.
  const metrics = { affinityPlacements: { inc: jest.fn() } } as unknown as ApiMetrics;
  const placement = new AffinityPlacement(
    env,
    {} as ModelRegistry,
    waitingLimit as unknown as WaitingLimit,
    {} as CompletionQueues,
    commands as unknown as RedisClient,
    metrics,
    {} as AffinityLookup,
  );
  const express = { place: jest.fn() };
  const runner = new CompletionRunner(
    env,
    events as unknown as CompletionEventBus,
    placement,
    express as unknown as ExpressLane,
    commands as unknown as RedisClient,
  );
  const sink: CompletionSink = { canRestart: false, promptParam: 'messages', write: () => undefined, restart: () => undefined };
  const job = { id: 'chatcmpl-1', model: 'm', schedule: { acceptedAt: 0, startDeadline: 0 } } as CompletionJobInput;
  const gone = AbortSignal.abort();
  return { runner, admission, queue, waitingLimit, commands, sink, job, gone, express };
}

describe('CompletionRunner', () => {
  it('does not queue the job of a client that left during admission, and gives back what admission took', async () => {
    const { runner, admission, waitingLimit, sink, job, gone } = setUp();
    await expect(runner.run(job, admission as unknown as Admission, sink, gone)).rejects.toMatchObject({ status: 499, code: 'client_closed' });
    expect(waitingLimit.add).not.toHaveBeenCalled();
    expect(admission.abandon).toHaveBeenCalledTimes(1);
  });

  it('queues a stored (detached) job all the same, and neither cancels it nor settles its tokens', async () => {
    const { runner, admission, queue, waitingLimit, commands, sink, job, gone } = setUp();
    const detached = { stopWhenUnheard: false };
    await expect(runner.run(job, admission as unknown as Admission, sink, gone, detached)).rejects.toMatchObject({ code: 'client_closed' });
    expect(waitingLimit.add).toHaveBeenCalledTimes(1);
    const [onQueue, shared, name, data, options, limit] = waitingLimit.add.mock.calls[0] as unknown as [
      unknown,
      unknown,
      string,
      { v: number; id: string; replyTo: { stopWhenUnheard: boolean } },
      { jobId: string },
      number,
    ];
    expect([onQueue, shared, name, data.id, data.replyTo.stopWhenUnheard, options.jobId, limit]).toEqual([
      queue,
      queue,
      'chat-completion',
      'chatcmpl-1',
      false,
      'chatcmpl-1',
      7,
    ]);
    // Stamped with the payload's version, which workers check before running it.
    expect(data.v).toBe(3);
    expect(admission.abandon).not.toHaveBeenCalled();
    expect(queue.remove).not.toHaveBeenCalled();
    expect(commands.spublish).not.toHaveBeenCalled();
    expect(admission.tokens.settle).not.toHaveBeenCalled();
  });

  it('keeps a stored (detached) job of a key under its fair share off the express lane: its state is read from the shared queue', async () => {
    const { runner, admission, queue, waitingLimit, sink, job, gone, express } = setUp();
    const underShare = { ...admission, fairShare: { ...admission.fairShare, express: true } };
    await expect(runner.run(job, underShare as unknown as Admission, sink, gone, { stopWhenUnheard: false })).rejects.toMatchObject({ code: 'client_closed' });
    expect(express.place).not.toHaveBeenCalled();
    expect((waitingLimit.add.mock.calls[0] as unknown[])[0]).toBe(queue);
  });

  it('answers 503 queue_full when the waiting limit refuses the job, gives back its reservation, and cancels nothing', async () => {
    const { runner, admission, queue, commands, sink, job } = setUp(Promise.resolve(false));
    await expect(runner.run(job, admission as unknown as Admission, sink, new AbortController().signal)).rejects.toMatchObject({
      status: 503,
      code: 'queue_full',
    });
    expect(admission.abandon).toHaveBeenCalledTimes(1);
    expect(queue.remove).not.toHaveBeenCalled();
    expect(commands.spublish).not.toHaveBeenCalled();
  });

  it('answers 503 service_unavailable when the add fails, and cancels the job in case Redis ran it', async () => {
    const { runner, admission, queue, commands, sink, job } = setUp(Promise.reject(new Error('Connection is closed.')));
    await expect(runner.run(job, admission as unknown as Admission, sink, new AbortController().signal)).rejects.toMatchObject({
      status: 503,
      code: 'service_unavailable',
    });
    expect(admission.abandon).toHaveBeenCalledTimes(1);
    expect(queue.remove).toHaveBeenCalledWith('chatcmpl-1');
    expect(commands.spublish).toHaveBeenCalledTimes(1);
  });
});
