import { completionEventsChannel, CompletionJobName, completionQueueName, completionQueuePrefix, eventBatchElements, toTokenEvent } from '@app/contracts';
import type { CompletionJobData, CompletionResult, TokenEvent } from '@app/contracts';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { waitFor } from '../support/service-stack';
import { e2eStack } from '../support/stack-env';

/**
 * A worker decodes every job before it runs it. A job written by an API of another version, or
 * by hand, that it cannot read fails unrun with the reason on the job, and whoever follows its
 * channel hears an error at once instead of waiting out the start deadline. A job of version 1
 * (queued by an API before the command had options and a schedule), or written before payloads
 * had a version, still runs, and so does one of version 2 (before jobs had kinds). A job of a kind
 * the worker's engine does not run fails unrun, naming the kind.
 */
describe('jobs a worker cannot read', () => {
  const stack = e2eStack();
  const queue = new Queue<Record<string, unknown>, CompletionResult>(completionQueueName(stack.model), {
    connection: { url: stack.redisUrl },
    prefix: completionQueuePrefix(stack.model),
  });
  afterAll(() => queue.close());

  const jobData = (completionId: string): CompletionJobData => ({
    v: 3,
    kind: 'generate',
    id: completionId,
    model: stack.model,
    replyTo: { channel: completionEventsChannel(completionId), stopWhenUnheard: false },
    options: {
      messages: [{ role: 'user', content: 'Where does the white rabbit live?' }],
      sampling: { temperature: 1, topP: 1, maxTokens: 8, stop: [], frequencyPenalty: 0, presencePenalty: 0, seed: 5 },
      responseFormat: { type: 'text' },
    },
    schedule: { acceptedAt: Date.now(), startDeadline: Date.now() + 30_000 },
  });

  /** The same job as an API of version 1 wrote it: one flat object. */
  const version1Data = (completionId: string): Record<string, unknown> => {
    const { id, options, schedule, ...rest } = jobData(completionId);
    return { ...rest, v: 1, completionId: id, ...options, ...schedule };
  };

  /** Adds the payload as a job and waits for its end, with the events its channel carried. */
  async function run(completionId: string, data: Record<string, unknown>) {
    const listener = new Redis(stack.redisUrl);
    const heard: TokenEvent[] = [];
    // A message may carry several events (the worker batches a turn's events per channel).
    listener.on('smessage', (_channel: string, message: string) => heard.push(...eventBatchElements(message).map(toTokenEvent)));
    await listener.ssubscribe(completionEventsChannel(completionId));
    try {
      await queue.add(CompletionJobName.ChatCompletion, data, { jobId: completionId });
      const job = await waitFor('the job to end', async () => {
        const found = await queue.getJob(completionId);
        return found?.finishedOn ? found : undefined;
      });
      // The final event is published before the job's end is recorded.
      return { job, heard };
    } finally {
      listener.disconnect();
    }
  }

  it('answers a job of version 1, still queued from an API before the upgrade', async () => {
    const completionId = `chatcmpl-v1-${Date.now()}`;
    const { job, heard } = await run(completionId, version1Data(completionId));
    expect(job.failedReason).toBeFalsy();
    expect(job.returnvalue.usage.completion_tokens).toBeGreaterThan(0);
    expect(heard.at(-1)?.type).toBe('end');
  });

  it('answers a job written before versions (no v) as version 1', async () => {
    const completionId = `chatcmpl-unversioned-${Date.now()}`;
    const unversioned = version1Data(completionId);
    delete unversioned.v;
    const { job, heard } = await run(completionId, unversioned);
    expect(job.failedReason).toBeFalsy();
    expect(job.returnvalue.usage.completion_tokens).toBeGreaterThan(0);
    expect(heard.at(-1)?.type).toBe('end');
  });

  it('answers a job of version 2, queued by an API before jobs had kinds, as a generate job', async () => {
    const completionId = `chatcmpl-v2-${Date.now()}`;
    const version2: Record<string, unknown> = { ...jobData(completionId), v: 2 };
    delete version2.kind;
    const { job, heard } = await run(completionId, version2);
    expect(job.failedReason).toBeFalsy();
    expect(job.returnvalue.usage.completion_tokens).toBeGreaterThan(0);
    expect(heard.at(-1)?.type).toBe('end');
  });

  it('fails a job of a later version unrun, saying why, and tells its channel', async () => {
    const completionId = `chatcmpl-v4-${Date.now()}`;
    const { job, heard } = await run(completionId, { ...jobData(completionId), v: 4 });
    expect(job.failedReason).toBe('unreadable job: the job payload is version 4; this worker reads versions 1 to 3');
    expect(job.attemptsMade).toBe(1);
    expect(heard.map((event) => event.type)).toEqual(['started', 'error']);
    expect(heard[1]).toMatchObject({ code: 'engine_error', message: expect.stringContaining('version 4') as unknown });
  });

  it('fails a job of a kind its engine does not run unrun, naming the kind, and tells its channel', async () => {
    const completionId = `chatcmpl-kind-${Date.now()}`;
    const { job, heard } = await run(completionId, { ...jobData(completionId), kind: 'transcribe' });
    expect(job.failedReason).toBe("unreadable job: the job is of kind 'transcribe'; this worker runs generate, tokenize jobs");
    expect(job.attemptsMade).toBe(1);
    expect(heard.map((event) => event.type)).toEqual(['started', 'error']);
    expect(heard[1]).toMatchObject({ code: 'engine_error', message: expect.stringContaining("kind 'transcribe'") as unknown });
  });

  it('fails a job without its generation options unrun, naming the field', async () => {
    const completionId = `chatcmpl-malformed-${Date.now()}`;
    const malformed: Partial<CompletionJobData> = jobData(completionId);
    delete malformed.options;
    const { job, heard } = await run(completionId, malformed);
    expect(job.failedReason).toBe('unreadable job: job.options is missing');
    // Unrun: no output, only the error.
    expect(heard.map((event) => event.type)).toEqual(['started', 'error']);
  });
});
