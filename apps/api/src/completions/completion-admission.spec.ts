import type { ApiEnv } from '@app/config';
import type { CompletionJobInput, WorkerAnnouncement } from '@app/contracts';
import { OpenAiError } from '../errors/openai-error';
import type { ModelRegistry } from '../models/model-registry';
import type { ApiKeyRateLimits, TokenReservation } from '../rate-limits/api-key-rate-limits';
import { CompletionAdmission } from './completion-admission';
import type { CompletionQueue, CompletionQueues } from './completion-queues';
import type { WaitingSlots } from './waiting-slots';

const job: CompletionJobInput = {
  completionId: 'chatcmpl-1',
  model: 'tiny-chat',
  messages: [{ role: 'user', content: 'Hi' }],
  sampling: { temperature: 1, topP: 1, stop: [], frequencyPenalty: 0, presencePenalty: 0, seed: 1 },
  responseFormat: { type: 'text' },
  acceptedAt: 0,
  startDeadline: 1000,
};

const worker: WorkerAnnouncement = {
  workerId: 'w1',
  model: 'tiny-chat',
  engine: 'llama.cpp',
  capabilities: { tools: false, grammar: false, logprobs: false, maxChoices: 1, logitBiasTokens: 100, unbiasableTokens: [] },
  slots: 1,
  freeSlots: 1,
  contextSize: 4096,
  announcedAt: 0,
};

/** Admission with its collaborators replaced by recorders; each test sets what they answer. */
function setup(options: { place?: boolean | Error; rateLimit?: 'ok' | OpenAiError; served?: boolean; unbiasableTokens?: number[] } = {}) {
  const calls: string[] = [];
  const queue = {} as CompletionQueue;
  const reservation: TokenReservation = { settle: () => calls.push('settle'), refund: () => calls.push('refund') };
  const waiting = {
    hold: () => {
      calls.push('hold');
      const place = options.place ?? true;
      return place instanceof Error ? Promise.reject(place) : Promise.resolve(place);
    },
    release: () => calls.push('release'),
  } as unknown as WaitingSlots;
  const rateLimits = {
    admit: () => {
      calls.push('rate-limit');
      const answer = options.rateLimit ?? 'ok';
      return answer === 'ok' ? Promise.resolve(reservation) : Promise.reject(answer);
    },
  } as unknown as ApiKeyRateLimits;
  const live = { ...worker, capabilities: { ...worker.capabilities, unbiasableTokens: options.unbiasableTokens ?? [] } };
  const models = { serves: () => options.served ?? true, liveWorkers: () => [live] } as unknown as ModelRegistry;
  const queues = { forModel: () => queue } as unknown as CompletionQueues;
  const env = { MAX_WAITING_JOBS: 4 } as ApiEnv;
  return { calls, queue, admission: new CompletionAdmission(env, models, queues, waiting, rateLimits) };
}

const rateLimited = new OpenAiError(429, 'requests', 'Rate limit reached', null, 'rate_limit_exceeded');

describe('CompletionAdmission', () => {
  it('admits with a held place and a token reservation, and lets the place go once enqueued', async () => {
    const { admission, calls, queue } = setup();
    const admitted = await admission.admit(job, 'key');
    expect(admitted.queue).toBe(queue);
    expect(calls.sort()).toEqual(['hold', 'rate-limit']);
    admitted.enqueued();
    expect(calls).toContain('release');
    expect(calls).not.toContain('refund');
  });

  it('answers 404 for a model nobody serves, before any Redis work', async () => {
    const { admission, calls } = setup({ served: false });
    await expect(admission.admit(job, 'key')).rejects.toMatchObject({ status: 404, code: 'model_not_found' });
    expect(calls).toEqual([]);
  });

  it('refuses with 503 shutting_down once the instance drains', async () => {
    const { admission, calls } = setup();
    admission.beforeApplicationShutdown();
    await expect(admission.admit(job, 'key')).rejects.toMatchObject({ status: 503, code: 'shutting_down' });
    expect(calls).toEqual([]);
  });

  it('refuses a logit_bias on a token the engine cannot bias, and one outside its vocabulary, before any Redis work', async () => {
    const { admission, calls } = setup({ unbiasableTokens: [2] });
    const biased = (token: number): CompletionJobInput => ({ ...job, sampling: { ...job.sampling, logitBias: [{ token: 1, bias: 5 }, { token, bias: -100 }] } });
    const refused = await admission.admit(biased(2), 'key').catch((error: unknown) => error);
    expect(refused).toMatchObject({ status: 400, param: 'logit_bias', code: 'unsupported_parameter' });
    expect((refused as OpenAiError).message).toContain('end-of-generation token 2');
    await expect(admission.admit(biased(100), 'key')).rejects.toMatchObject({ status: 400, param: 'logit_bias', code: 'invalid_value' });
    expect(calls).toEqual([]);
    await expect(admission.admit(biased(3), 'key')).resolves.toBeDefined();
  });

  it('refunds the rate-limit reservation when the queue is full', async () => {
    const { admission, calls } = setup({ place: false });
    await expect(admission.admit(job, 'key')).rejects.toMatchObject({ status: 503, code: 'queue_full' });
    expect(calls).toContain('refund');
    expect(calls).not.toContain('release');
  });

  it('releases the held place when the key is over its rate limit', async () => {
    const { admission, calls } = setup({ rateLimit: rateLimited });
    await expect(admission.admit(job, 'key')).rejects.toBe(rateLimited);
    expect(calls).toContain('release');
  });

  it('answers 503 when Redis cannot hold a place, and refunds the reservation', async () => {
    const { admission, calls } = setup({ place: new Error('connection closed') });
    await expect(admission.admit(job, 'key')).rejects.toMatchObject({ status: 503, code: 'service_unavailable' });
    expect(calls).toContain('refund');
  });

  it('gives back both the place and the reservation when the job is abandoned', async () => {
    const { admission, calls } = setup();
    const admitted = await admission.admit(job, 'key');
    admitted.abandon();
    expect(calls).toEqual(expect.arrayContaining(['release', 'refund']));
  });
});
