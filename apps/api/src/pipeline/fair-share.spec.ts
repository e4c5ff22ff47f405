import type { ApiEnv } from '@app/config';
import { fairShareBandStart, FLEX_PRIORITY, withTier } from '@app/contracts';
import type { CompletionJobInput, TokenEvent } from '@app/contracts';
import { apiKeyId } from '../auth/api-key.guard';
import type { ApiMetrics } from '../observability/api-metrics';
import type { CompletionQueue } from './completion-queues';
import { FairShare, weightsById } from './fair-share';
import type { FairShareCounters } from './fair-share-counters';

const KEY = 'sk-weighted-key-0123';
const job = {
  kind: 'generate',
  id: 'chatcmpl-1',
  model: 'm',
  options: { messages: [{ role: 'user', content: 'x'.repeat(40) }], sampling: { maxTokens: 20 } },
  schedule: { tier: 'default', acceptedAt: Date.now(), startDeadline: Date.now() + 60_000 },
} as unknown as CompletionJobInput;
const queue = { toKey: (type: string) => `{llm:m}:completions-m:${type}` } as unknown as CompletionQueue;
const started: TokenEvent = { type: 'started', completionId: 'chatcmpl-1', attempt: 1, seq: 0, workerId: 'w' };
const ended: TokenEvent = {
  type: 'end',
  completionId: 'chatcmpl-1',
  attempt: 1,
  seq: 1,
  finishReason: 'stop',
  usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 },
};

/** FairShare over recording counters: every charge, start and correction it makes. */
function setUp(env: Partial<ApiEnv>, underShare = false) {
  const calls: Array<[string, ...unknown[]]> = [];
  const counters = {
    admit: (...args: unknown[]) => {
      calls.push(['admit', ...args]);
      return Promise.resolve({ priority: 1234, start: 640, underShare });
    },
    started: (...args: unknown[]) => (calls.push(['started', ...args]), Promise.resolve()),
    correct: (...args: unknown[]) => (calls.push(['correct', ...args]), Promise.resolve()),
  } as unknown as FairShareCounters;
  const metrics = { keyQueueWait: { observe: jest.fn() }, keyServedTokens: { inc: jest.fn() } };
  const fullEnv = { FAIR_SHARE: true, FAIR_SHARE_WEIGHTS: [], API_KEYS: [KEY], ...env } as unknown as ApiEnv;
  return { calls, metrics, fairShare: new FairShare(fullEnv, counters, metrics as unknown as ApiMetrics) };
}

describe('FairShare', () => {
  it("charges the estimate (prompt + 2 × max answer) over the key's weight, then corrects it to the real usage", async () => {
    const { calls, fairShare } = setUp({ FAIR_SHARE_WEIGHTS: [`${KEY}=2`] });
    const ticket = await fairShare.admit(job, queue, apiKeyId(KEY));
    expect(ticket.jobOptions).toEqual({ priority: 1234 });
    // 40 characters ≈ 10 prompt tokens, 20 answer tokens at 2: 50, over weight 2: 25.
    expect(calls[0]).toEqual([
      'admit',
      'm',
      'default',
      apiKeyId(KEY),
      25,
      '{llm:m}:completions-m:prioritized',
      fairShareBandStart('default'),
      expect.any(Number),
    ]);
    ticket.onEvent(started);
    ticket.onEvent(ended);
    ticket.release();
    // Served 12 + 2 × 5 = 22, over 2: 11, so 14 less than charged.
    expect(calls.slice(1)).toEqual([
      ['started', 'm', 'default', 640],
      ['correct', 'm', 'default', apiKeyId(KEY), -14],
    ]);
  });

  it('gives the whole charge back for a job that never started', async () => {
    const { calls, fairShare } = setUp({});
    const ticket = await fairShare.admit(job, queue, 'some-key-id');
    ticket.release();
    ticket.release();
    expect(calls.slice(1)).toEqual([['correct', 'm', 'default', 'some-key-id', -50]]);
  });

  it('places by tier alone, with no Redis work, when off; still measures the key', async () => {
    const { calls, fairShare, metrics } = setUp({ FAIR_SHARE: false });
    expect((await fairShare.admit(job, queue, 'k')).jobOptions).toEqual({});
    const flex = await fairShare.admit(withTier(job, 'flex'), queue, 'k');
    expect(flex.jobOptions).toEqual({ priority: FLEX_PRIORITY });
    flex.onEvent(started);
    flex.onEvent(ended);
    flex.release();
    expect(calls).toEqual([]);
    expect(metrics.keyQueueWait.observe).toHaveBeenCalledWith({ model: 'm', tier: 'flex', key: 'k' }, expect.any(Number));
    expect(metrics.keyServedTokens.inc).toHaveBeenCalledWith({ model: 'm', key: 'k', kind: 'completion' }, 5);
  });
});

describe('FairShare express lane', () => {
  it('sends a job of a key under its fair share there only with FAIR_SHARE_EXPRESS, and never a flex one', async () => {
    const express = setUp({ FAIR_SHARE_EXPRESS: true }, true).fairShare;
    expect((await express.admit(job, queue, 'k')).express).toBe(true);
    expect((await express.admit(withTier(job, 'flex'), queue, 'k')).express).toBe(false);
    expect((await setUp({ FAIR_SHARE_EXPRESS: true }, false).fairShare.admit(job, queue, 'k')).express).toBe(false);
    expect((await setUp({ FAIR_SHARE_EXPRESS: false }, true).fairShare.admit(job, queue, 'k')).express).toBe(false);
    expect((await setUp({ FAIR_SHARE: false, FAIR_SHARE_EXPRESS: true }, true).fairShare.admit(job, queue, 'k')).express).toBe(false);
  });
});

describe('weightsById', () => {
  it('reads key=weight by key id (a key may hold "=")', () => {
    expect(weightsById(['sk-a=b-123=2.5'], ['sk-a=b-123'])).toEqual(new Map([[apiKeyId('sk-a=b-123'), 2.5]]));
  });

  it('refuses a key not in API_KEYS without naming it', () => {
    expect(() => weightsById(['sk-unknown-secret=2'], [KEY])).toThrow(/^FAIR_SHARE_WEIGHTS: an entry names a key not in API_KEYS$/);
  });
});
