import type { CompletionJobInput, WorkerAnnouncement, JobKind } from '@app/contracts';
import { OpenAiError } from '../errors/openai-error';
import type { ModelRegistry } from '../models/model-registry';
import type { ApiKeyRateLimits, TokenReservation } from '../rate-limits/api-key-rate-limits';
import { CompletionAdmission } from './completion-admission';
import type { FairShare, FairShareTicket } from './fair-share';
import type { CompletionQueue, CompletionQueues } from './completion-queues';

const job: CompletionJobInput = {
  kind: 'generate',
  id: 'chatcmpl-1',
  model: 'tiny-chat',
  options: {
    messages: [{ role: 'user', content: 'Hi' }],
    sampling: { temperature: 1, topP: 1, stop: [], frequencyPenalty: 0, presencePenalty: 0, seed: 1 },
    responseFormat: { type: 'text' },
  },
  schedule: { acceptedAt: 0, startDeadline: 1000 },
};

const worker: WorkerAnnouncement = {
  workerId: 'w1',
  model: 'tiny-chat',
  engine: 'llama.cpp',
  capabilities: { kinds: ['generate'], tools: false, grammar: false, logprobs: false, maxChoices: 1, logitBiasTokens: 100, unbiasableTokens: [] },
  slots: 1,
  freeSlots: 1,
  contextSize: 4096,
  announcedAt: 0,
};

/** Admission with its collaborators replaced by recorders; each test sets what they answer. */
function setup(options: { rateLimit?: 'ok' | OpenAiError; served?: boolean; unbiasableTokens?: number[]; kinds?: JobKind[] } = {}) {
  const calls: string[] = [];
  const queue = {} as CompletionQueue;
  const reservation: TokenReservation = { settle: () => calls.push('settle'), refund: () => calls.push('refund') };
  const rateLimits = {
    admit: () => {
      calls.push('rate-limit');
      const answer = options.rateLimit ?? 'ok';
      return answer === 'ok' ? Promise.resolve(reservation) : Promise.reject(answer);
    },
  } as unknown as ApiKeyRateLimits;
  const live = { ...worker, capabilities: { ...worker.capabilities, unbiasableTokens: options.unbiasableTokens ?? [], kinds: options.kinds ?? ['generate'] } };
  const models = { serves: () => options.served ?? true, liveWorkers: () => [live] } as unknown as ModelRegistry;
  const queues = { forModel: () => queue } as unknown as CompletionQueues;
  const ticket: FairShareTicket = { jobOptions: {}, express: false, onEvent: () => undefined, release: () => calls.push('fair-share release') };
  const fairShare = { admit: () => Promise.resolve(ticket) } as unknown as FairShare;
  return { calls, queue, admission: new CompletionAdmission(models, queues, rateLimits, fairShare) };
}

const rateLimited = new OpenAiError(429, 'requests', 'Rate limit reached', null, 'rate_limit_exceeded');

describe('CompletionAdmission', () => {
  it('admits with a token reservation, and gives it back when the job is abandoned', async () => {
    const { admission, calls, queue } = setup();
    const admitted = await admission.admit(job, 'key');
    expect(admitted.queue).toBe(queue);
    expect(calls).toEqual(['rate-limit']);
    admitted.abandon();
    expect(calls).toEqual(['rate-limit', 'refund', 'fair-share release']);
  });

  it('answers 404 for a model nobody serves, before any Redis work', async () => {
    const { admission, calls } = setup({ served: false });
    await expect(admission.admit(job, 'key')).rejects.toMatchObject({ status: 404, code: 'model_not_found' });
    expect(calls).toEqual([]);
  });

  it("refuses a kind of job the model's live workers do not run with a 400 naming the model, before any Redis work", async () => {
    const { admission, calls } = setup({ kinds: [] });
    await expect(admission.admit(job, 'key')).rejects.toMatchObject({ status: 400, param: 'model', code: 'model_not_supported' });
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
    const biased = (token: number): CompletionJobInput => ({
      ...job,
      options: {
        ...job.options,
        sampling: {
          ...job.options.sampling,
          logitBias: [
            { token: 1, bias: 5 },
            { token, bias: -100 },
          ],
        },
      },
    });
    const refused = await admission.admit(biased(2), 'key').catch((error: unknown) => error);
    expect(refused).toMatchObject({ status: 400, param: 'logit_bias', code: 'unsupported_parameter' });
    expect((refused as OpenAiError).message).toContain('end-of-generation token 2');
    await expect(admission.admit(biased(100), 'key')).rejects.toMatchObject({ status: 400, param: 'logit_bias', code: 'invalid_value' });
    expect(calls).toEqual([]);
    await expect(admission.admit(biased(3), 'key')).resolves.toBeDefined();
  });

  it('passes on the refusal of a key over its rate limit', async () => {
    const { admission } = setup({ rateLimit: rateLimited });
    await expect(admission.admit(job, 'key')).rejects.toBe(rateLimited);
  });
});
