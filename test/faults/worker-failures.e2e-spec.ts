import { assertMatchesSchema } from '../support/openai-schema';
import { recordFigure } from '../support/figures';
import { STACK_API_KEY, STACK_MODEL, ServiceStack, waitFor } from '../support/service-stack';
import { longRequest, postChat, readStream } from '../support/chat-requests';

interface Completion {
  choices: Array<{ message: { content: string }; finish_reason: string }>;
  usage: { completion_tokens: number };
}

/** Workers are killed (SIGKILL) and stopped (SIGTERM) for real, mid-job. */
describe('worker failures', () => {
  let stack: ServiceStack;

  beforeEach(async () => {
    stack = await ServiceStack.start({ name: 'workers', workers: 1, parallelSequences: 1, workerEnv: { JOB_LOCK_MS: '2000' } });
  });
  afterEach(() => stack.stop());

  it('ends a stream whose worker is killed with an error event and [DONE] within seconds, no token twice', async () => {
    const request = longRequest(STACK_MODEL, { max_tokens: 4000, stream: true, seed: 5 });
    const response = await postChat(stack.baseUrl, STACK_API_KEY, request);
    let killedAt = 0;
    const reading = await readStream(response, (_event, soFar) => {
      if (killedAt === 0 && soFar.content.length > 50) {
        killedAt = Date.now();
        stack.workers[0].child.kill('SIGKILL');
      }
    });
    const endedAfterMs = Date.now() - killedAt;

    expect(reading.sawDone).toBe(true);
    recordFigure('worker SIGKILL mid-stream -> error event and [DONE]', endedAfterMs);
    expect(endedAfterMs).toBeLessThan(6000);
    const last = reading.events.at(-1) as unknown as { error: { message: string } };
    assertMatchesSchema('ErrorResponse', last);
    expect(last.error.message).toMatch(/worker/i);

    // What was sent is a clean prefix of the real answer: nothing repeated, nothing skipped.
    await stack.addWorker();
    const whole = (await (await postChat(stack.baseUrl, STACK_API_KEY, { ...request, stream: false })).json()) as Completion;
    expect(whole.choices[0].message.content.startsWith(reading.content)).toBe(true);
  });

  it('retries a non-stream completion on another worker when its worker dies, and the client never notices', async () => {
    const request = longRequest(STACK_MODEL, { max_tokens: 3000, seed: 11 });
    const queue = stack.queue();
    const answer = postChat(stack.baseUrl, STACK_API_KEY, request);
    const job = await waitFor('the job to run', async () => (await queue.getJobs(['active']))[0]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    await stack.workers[0].stop('SIGKILL');
    await stack.addWorker();

    const response = await answer;
    expect(response.status).toBe(200);
    const completion = (await response.json()) as Completion;
    expect(completion.choices[0].finish_reason).toBe('length');
    expect(completion.usage.completion_tokens).toBe(3000);
    const retried = await queue.getJob(job.id!);
    expect(retried?.attemptsStarted).toBe(2);

    // The same seeded request on a healthy worker gives the very same text.
    const again = (await (await postChat(stack.baseUrl, STACK_API_KEY, request)).json()) as Completion;
    expect(completion.choices[0].message.content).toBe(again.choices[0].message.content);
  });

  it('lets a worker finish its job on SIGTERM, stop taking new ones, and leave waiting jobs to others', async () => {
    const queue = stack.queue();
    const running = postChat(stack.baseUrl, STACK_API_KEY, longRequest(STACK_MODEL, { max_tokens: 2000 }));
    await waitFor('the first job to run', async () => (await queue.getActiveCount()) === 1);
    const waiting = postChat(stack.baseUrl, STACK_API_KEY, { model: STACK_MODEL, messages: [{ role: 'user', content: 'Next' }], max_tokens: 5 });
    await waitFor('the second job to wait', async () => (await queue.getWaitingCount()) === 1);

    const exitCode = stack.workers[0].stop('SIGTERM', 30_000);
    const first = await running;
    expect(first.status).toBe(200);
    expect(((await first.json()) as Completion).choices[0].finish_reason).toBe('length');
    await exitCode;
    // A graceful exit: Nest re-raises SIGTERM once closed; a worker that had to be killed shows SIGKILL.
    expect(stack.workers[0].child.signalCode).toBe('SIGTERM');
    expect(await queue.getWaitingCount()).toBe(1);

    await stack.addWorker();
    expect((await waiting).status).toBe(200);
  });
});
