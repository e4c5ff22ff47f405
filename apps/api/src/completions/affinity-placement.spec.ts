import type { ApiEnv } from '@app/config';
import { affinityMapKey } from '@app/contracts';
import type { CompletionJobInput } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import type { ModelRegistry } from '../models/model-registry';
import type { ApiMetrics } from '../observability/api-metrics';
import { clientAffinityKey, prefixAffinityKey } from './affinity-key';
import { AffinityPlacement } from './affinity-placement';
import type { CompletionQueue, CompletionQueues } from './completion-queues';
import type { WaitingLimit } from './waiting-limit';

/**
 * The placement's choice around stand-ins for Redis, the registry and the queues: worker w1 (two
 * sequences) served the key last; `waitingOnShared` jobs wait on the shared queue.
 */
function setUp({ affinity = true, waitingOnShared = 0 } = {}) {
  const env = { AFFINITY: affinity, AFFINITY_WAIT_MS: 1000, AFFINITY_TTL_MS: 60_000, MAX_WAITING_JOBS: 3 } as ApiEnv;
  const redis = { get: jest.fn(() => Promise.resolve('w1')), set: jest.fn(() => Promise.resolve('OK')) };
  const models = { liveWorkers: () => [{ workerId: 'w1', slots: 2 }] };
  const ownQueue = { getJobCounts: () => Promise.resolve({ wait: 0, prioritized: 0 }) };
  const queues = { forWorker: jest.fn(() => ownQueue) };
  const shared = { getWaitingCount: () => Promise.resolve(waitingOnShared) } as unknown as CompletionQueue;
  const metrics = { affinityPlacements: { inc: jest.fn() } } as unknown as ApiMetrics;
  const placement = new AffinityPlacement(
    env,
    models as unknown as ModelRegistry,
    {} as WaitingLimit,
    queues as unknown as CompletionQueues,
    redis as unknown as RedisClient,
    metrics,
  );
  return { placement, redis, shared, queues, ownQueue };
}

const conversation = {
  id: 'chatcmpl-1',
  model: 'm',
  options: {
    messages: [
      { role: 'system', content: 'You are a storyteller.' },
      { role: 'user', content: 'Who pours?' },
    ],
  },
  schedule: { acceptedAt: 0, startDeadline: 30_000 },
} as unknown as CompletionJobInput;

describe('AffinityPlacement', () => {
  it('hashes the conversation start only with affinity on, and looks the worker up by it', async () => {
    const off = setUp({ affinity: false });
    expect((await off.placement.place(conversation, off.shared, false)).outcome).toBe('off');
    expect(off.redis.get).not.toHaveBeenCalled();

    const on = setUp();
    const { placed, outcome } = await on.placement.place(conversation, on.shared, false);
    expect(outcome).toBe('hit');
    expect(placed.onWorkerQueue).toBe(true);
    expect(on.redis.get).toHaveBeenCalledWith(affinityMapKey('m', prefixAffinityKey(conversation.options.messages, undefined)));
  });

  it("takes the door's key when it set one (a client's prompt_cache_key)", async () => {
    const { placement, redis, shared } = setUp();
    const affinityKey = clientAffinityKey('conversation-7')!;
    await placement.place({ ...conversation, schedule: { ...conversation.schedule, affinityKey } }, shared, false);
    expect(redis.get).toHaveBeenCalledWith(affinityMapKey('m', affinityKey));
  });

  it('sends the job through the shared queue (and its limit) when that queue is full, though its worker is free', async () => {
    const { placement, shared } = setUp({ waitingOnShared: 3 });
    const { placed, outcome } = await placement.place(conversation, shared, false);
    expect(outcome).toBe('busy');
    expect(placed.onWorkerQueue).toBe(false);
  });
});
