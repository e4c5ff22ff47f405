import type { ApiEnv } from '@app/config';
import type { GenerateJobInput } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import type { ModelRegistry } from '../models/model-registry';
import type { ApiMetrics } from '../observability/api-metrics';
import { clientAffinityKey, prefixAffinityKey } from './affinity-key';
import type { AffinityLookup } from './affinity-lookup';
import { AffinityPlacement } from './affinity-placement';
import type { CompletionQueue, CompletionQueues } from './completion-queues';
import type { WaitingLimit } from './waiting-limit';

/**
 * The placement's choice around stand-ins for Redis, the registry and the queues: worker w1 (two
 * sequences) served the key last; `waitingOnShared` jobs wait on the shared queue.
 */
function setUp({ affinity = true, waitingOnShared = 0 } = {}) {
  const env = { AFFINITY: affinity, AFFINITY_WAIT_MS: 1000, AFFINITY_TTL_MS: 60_000, MAX_WAITING_JOBS: 3 } as ApiEnv;
  const redis = { set: jest.fn(() => Promise.resolve('OK')) };
  const lookup = { read: jest.fn(() => Promise.resolve({ workerId: 'w1', waitingOnWorker: 0, waitingOnShared })) };
  const models = { liveWorkers: () => [{ workerId: 'w1', slots: 2 }] };
  const ownQueue = {};
  const queues = { forWorker: jest.fn(() => ownQueue) };
  const shared = {} as CompletionQueue;
  const metrics = { affinityPlacements: { inc: jest.fn() } } as unknown as ApiMetrics;
  const placement = new AffinityPlacement(
    env,
    models as unknown as ModelRegistry,
    {} as WaitingLimit,
    queues as unknown as CompletionQueues,
    redis as unknown as RedisClient,
    metrics,
    lookup as unknown as AffinityLookup,
  );
  return { placement, redis, lookup, shared, queues, ownQueue };
}

const conversation = {
  kind: 'generate',
  id: 'chatcmpl-1',
  model: 'm',
  options: {
    messages: [
      { role: 'system', content: 'You are a storyteller.' },
      { role: 'user', content: 'Who pours?' },
    ],
  },
  schedule: { acceptedAt: 0, startDeadline: 30_000 },
} as unknown as GenerateJobInput;

describe('AffinityPlacement', () => {
  it('hashes the conversation start only with affinity on, and looks the worker up by it', async () => {
    const off = setUp({ affinity: false });
    expect((await off.placement.place(conversation, off.shared, false)).outcome).toBe('off');
    expect(off.lookup.read).not.toHaveBeenCalled();

    const on = setUp();
    const { placed, outcome } = await on.placement.place(conversation, on.shared, false);
    expect(outcome).toBe('hit');
    expect(placed.onWorkerQueue).toBe(true);
    expect(on.lookup.read).toHaveBeenCalledWith('m', prefixAffinityKey(conversation.options.messages, undefined), on.shared);
  });

  it("takes the door's key when it set one (a client's prompt_cache_key)", async () => {
    const { placement, lookup, shared } = setUp();
    const affinityKey = clientAffinityKey('conversation-7')!;
    await placement.place({ ...conversation, schedule: { ...conversation.schedule, affinityKey } }, shared, false);
    expect(lookup.read).toHaveBeenCalledWith('m', affinityKey, shared);
  });

  it('sends the job through the shared queue (and its limit) when that queue is full, though its worker is free', async () => {
    const { placement, shared } = setUp({ waitingOnShared: 3 });
    const { placed, outcome } = await placement.place(conversation, shared, false);
    expect(outcome).toBe('busy');
    expect(placed.onWorkerQueue).toBe(false);
  });
});
