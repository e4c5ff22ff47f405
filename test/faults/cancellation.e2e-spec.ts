import { recordFigure } from '../support/figures';
import { STACK_API_KEY, STACK_MODEL, ServiceStack, waitFor } from '../support/service-stack';
import { longRequest, postChat, readStream } from '../support/chat-requests';

/**
 * A client that goes away frees its GPU time: a waiting job leaves the queue, a running one is
 * aborted on the worker and its sequence serves the next job. One worker with one sequence,
 * so "the slot is free again" is visible as the next request running.
 */
describe('cancellation when the client disconnects', () => {
  let stack: ServiceStack;

  beforeAll(async () => {
    // The tests watch the model's shared queue: with AFFINITY on, a repeated prompt may wait on the
    // worker's own queue instead (the affinity specs cover that queue).
    stack = await ServiceStack.start({ name: 'cancel', workers: 1, parallelSequences: 1, apiEnv: { AFFINITY: 'false' } });
  });
  afterAll(() => stack.stop());

  it('aborts a running stream on the worker and frees its sequence for the next job', async () => {
    const queue = stack.queue();
    const client = new AbortController();
    const response = await postChat(stack.baseUrl, STACK_API_KEY, longRequest(STACK_MODEL, { stream: true }), client.signal);
    let completionId = '';
    await readStream(response, (event, reading) => {
      completionId = event.id as string;
      return reading.content.length > 20;
    });
    const disconnectedAt = Date.now();
    client.abort();

    const job = await waitFor('the job to fail as cancelled', async () => {
      const found = await queue.getJob(completionId);
      return found?.finishedOn ? found : undefined;
    });
    expect(job.failedReason).toMatch(/cancelled/);
    recordFigure('stream disconnect -> job aborted on worker', job.finishedOn! - disconnectedAt);
    // A functional bound only; the latency itself is measured by `npm run bench:cancel`.
    expect(job.finishedOn! - disconnectedAt).toBeLessThan(2000);
    expect(job.returnvalue).toBeFalsy();

    const next = await postChat(stack.baseUrl, STACK_API_KEY, { model: STACK_MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 5 });
    expect(next.status).toBe(200);
  });

  it('treats a non-stream client that disconnects the same way', async () => {
    const queue = stack.queue();
    const client = new AbortController();
    const request = postChat(stack.baseUrl, STACK_API_KEY, longRequest(STACK_MODEL), client.signal).catch((error: unknown) => error);
    const active = await waitFor('the job to run', async () => (await queue.getJobs(['active']))[0]);
    client.abort();
    await request;

    const job = await waitFor('the job to fail as cancelled', async () => {
      const found = await queue.getJob(active.id!);
      return found?.finishedOn ? found : undefined;
    });
    expect(job.failedReason).toMatch(/cancelled/);
  });

  it('removes a job still waiting in the queue when its client disconnects', async () => {
    const queue = stack.queue();
    const busy = new AbortController();
    const running = postChat(stack.baseUrl, STACK_API_KEY, longRequest(STACK_MODEL), busy.signal).catch(() => undefined);
    await waitFor('the first job to run', async () => (await queue.getActiveCount()) === 1);

    const client = new AbortController();
    const waiting = postChat(stack.baseUrl, STACK_API_KEY, longRequest(STACK_MODEL, { stream: true }), client.signal).catch(() => undefined);
    const queued = await waitFor('the second job to wait', async () => (await queue.getJobs(['waiting']))[0]);
    client.abort();
    await waiting;

    await waitFor('the waiting job to leave the queue', async () => (await queue.getJob(queued.id!)) === undefined);
    expect(await queue.getWaitingCount()).toBe(0);
    busy.abort();
    await running;
  });
});
