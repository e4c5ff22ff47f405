import { completionQueueName, completionQueuePrefix, workerQueueName, workerQueuesKey } from '@app/contracts';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { scrape, serverRoot, total } from '../operators/prometheus-text';
import { basicAuth, boardJob, endedAs } from '../support/bull-board-api';
import { STACK_API_KEY, STACK_MODEL, ServiceStack, waitFor } from '../support/service-stack';

const AFFINITY_WAIT_MS = 1000;
/** Long enough for each test to read what a gone worker ran, short enough to see its queue deleted. */
const GONE_WORKER_QUEUE_KEEP_MS = 8000;
const ADMIN_PASSWORD = 'affinity-board-password';

/**
 * Prefix-cache affinity across workers, on real processes: a conversation's turns go to the
 * worker that served it last (through its own queue) while that worker is free, and move to the
 * model's shared queue within AFFINITY_WAIT_MS when it is dead or draining; a job runs once.
 */
describe('prefix-cache affinity across workers', () => {
  let stack: ServiceStack;
  let client: OpenAI;
  const queues = new Map<string, Queue>();

  beforeAll(async () => {
    stack = await ServiceStack.start({
      name: 'affinity',
      workers: 3,
      parallelSequences: 2,
      apiEnv: { AFFINITY: 'true', AFFINITY_WAIT_MS: String(AFFINITY_WAIT_MS), ADMIN_PASSWORD },
      workerEnv: { GONE_WORKER_QUEUE_KEEP_MS: String(GONE_WORKER_QUEUE_KEEP_MS) },
    });
    client = new OpenAI({ baseURL: stack.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
    const open = (name: string) => queues.set(name, new Queue(name, { connection: { url: stack.redis.url }, prefix: completionQueuePrefix(STACK_MODEL) }));
    open(completionQueueName(STACK_MODEL));
    for (let index = 1; index <= 3; index++) open(workerQueueName(STACK_MODEL, `affinity-worker-${index}`));
  }, 120_000);

  afterAll(async () => {
    await Promise.all([...queues.values()].map((queue) => queue.close()));
    await stack?.stop();
  });

  /** Every queue that holds a job of this id, with the worker that ran it there. */
  const placements = async (id: string) => {
    const found = await Promise.all([...queues.entries()].map(async ([name, queue]) => ({ name, job: await queue.getJob(id) })));
    return found
      .filter(({ job }) => job !== undefined)
      .map(({ name, job }) => ({ queue: name, worker: job!.processedBy, attempts: job!.attemptsStarted, finished: job!.finishedOn !== undefined }));
  };
  const servedOnce = async (id: string) => {
    const [only, ...others] = await waitFor(`job ${id} finished`, async () => {
      const found = await placements(id);
      return found.every(({ finished }) => finished) && found.length > 0 && found;
    });
    expect(others).toEqual([]);
    expect(only.attempts).toBe(1);
    return only;
  };

  /** The names of the queues Bull Board lists, as an operator's browser loads them. */
  const board = () => `${serverRoot(stack.baseUrl)}/admin/queues`;
  const boardAuth = basicAuth('admin', ADMIN_PASSWORD);
  const boardQueues = async () => {
    const listed = (await (await fetch(`${board()}/api/queues`, { headers: { authorization: boardAuth } })).json()) as { queues: Array<{ name: string }> };
    return listed.queues.map(({ name }) => name);
  };

  const placementsCounted = async (outcome: string) =>
    total((await scrape(`${serverRoot(stack.baseUrl)}/metrics`)).samples, 'llm_api_affinity_placements_total', { model: STACK_MODEL, outcome });

  type Message = OpenAI.ChatCompletionMessageParam;
  const system = `You are a storyteller. ${'Every tale you tell is about a hatter, a hare and a dormouse at a tea party. '.repeat(12)}`;
  const turn = (history: Message[], question: string, extra: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming> = {}) =>
    client.chat.completions.create({
      model: STACK_MODEL,
      messages: [{ role: 'system', content: system }, ...history, { role: 'user', content: question }],
      max_tokens: 12,
      temperature: 0,
      ...extra,
    });

  it("sends a conversation's turns to the worker that served it while that worker is free: each finds the turns before it cached", async () => {
    const hitsBefore = await placementsCounted('hit');
    const history: Message[] = [];
    const served: Array<{ queue: string; worker?: string; id: string }> = [];
    let previousTurnTokens = 0;
    for (const question of ['Who pours the tea?', 'And who drinks it?', 'Why is the dormouse asleep?', 'What time is it?']) {
      const answer = await turn(history, question);
      served.push({ ...(await servedOnce(answer.id)), id: answer.id });
      if (previousTurnTokens > 0) expect(answer.usage!.prompt_tokens_details!.cached_tokens).toBeGreaterThanOrEqual(previousTurnTokens - 3);
      previousTurnTokens = answer.usage!.prompt_tokens + answer.usage!.completion_tokens;
      history.push({ role: 'user', content: question }, { role: 'assistant', content: answer.choices[0].message.content });
    }
    const worker = served[0].worker!;
    expect(served.map((placement) => placement.worker)).toEqual([worker, worker, worker, worker]);
    // The first turn from the shared queue; the others placed on that worker's own queue.
    expect(served.map((placement) => placement.queue)).toEqual([
      completionQueueName(STACK_MODEL),
      ...Array<string>(3).fill(workerQueueName(STACK_MODEL, worker)),
    ]);
    expect((await placementsCounted('hit')) - hitsBefore).toBe(3);
    // Operators see each live worker's own queue in Bull Board, and there the turns it ran.
    const listed = await waitFor("Bull Board to list the workers' own queues", async () => {
      const names = await boardQueues();
      return names.filter((name) => name.startsWith(workerQueueName(STACK_MODEL, ''))).length === 3 && names;
    });
    expect(listed).toContain(completionQueueName(STACK_MODEL));
    expect(endedAs(await boardJob(board(), boardAuth, workerQueueName(STACK_MODEL, worker), served[1].id), 'completed')?.job.processedBy).toBe(worker);
  });

  it('keeps a Responses conversation on its worker through previous_response_id, by the key its first turn gave', async () => {
    const first = await client.responses.create({
      model: STACK_MODEL,
      instructions: system,
      input: 'Who pours the tea?',
      prompt_cache_key: 'responses-chain',
      max_output_tokens: 16,
      temperature: 0,
    });
    const { worker } = await servedOnce(first.id);
    // No key and no instructions now: only the continued response's key leads back to its worker.
    const next = await client.responses.create({
      model: STACK_MODEL,
      previous_response_id: first.id,
      input: 'And then?',
      max_output_tokens: 16,
      temperature: 0,
    });
    expect(await servedOnce(next.id)).toMatchObject({ queue: workerQueueName(STACK_MODEL, worker!), worker });
  });

  it('answers the next turn on another worker within the bound when the worker holding the conversation was SIGKILLed, and runs it once', async () => {
    const key = 'conversation-killed';
    const first = await turn([], 'Who pours the tea?', { prompt_cache_key: key });
    const { worker } = await servedOnce(first.id);
    await stack.workers.find((process) => process.name === `worker:${worker}`)?.stop('SIGKILL');
    const fallbacksBefore = await placementsCounted('fallback');
    const startedAt = Date.now();
    const next = await turn(
      [
        { role: 'user', content: 'Who pours the tea?' },
        { role: 'assistant', content: first.choices[0].message.content },
      ],
      'And then?',
      { prompt_cache_key: key },
    );
    const tookMs = Date.now() - startedAt;
    const placed = await servedOnce(next.id);
    expect(placed.worker).not.toBe(worker);
    expect(placed.queue).toBe(completionQueueName(STACK_MODEL));
    // Placed on the dead worker's queue (it is listed until its announcement expires) and moved.
    expect(tookMs).toBeLessThan(AFFINITY_WAIT_MS + 3000);
    expect((await placementsCounted('fallback')) - fallbacksBefore).toBe(1);
  });

  it('retries a turn on another worker when the worker running it from its own queue is SIGKILLed: the client gets one whole answer', async () => {
    // Two workers live besides the one this test kills (the last test needs two).
    await stack.addWorker();
    const added = `affinity-worker-${stack.workers.length}`;
    queues.set(
      workerQueueName(STACK_MODEL, added),
      new Queue(workerQueueName(STACK_MODEL, added), { connection: { url: stack.redis.url }, prefix: completionQueuePrefix(STACK_MODEL) }),
    );
    const key = 'conversation-killed-mid-answer';
    const first = await turn([], 'Who pours the tea?', { prompt_cache_key: key });
    const { worker } = await servedOnce(first.id);
    const ownQueue = queues.get(workerQueueName(STACK_MODEL, worker!))!;
    const long = turn(
      [
        { role: 'user', content: 'Who pours the tea?' },
        { role: 'assistant', content: first.choices[0].message.content },
      ],
      'Tell me everything.',
      {
        prompt_cache_key: key,
        max_tokens: 3000,
      },
    );
    // The waits below have room for a loaded CI machine: each passes in a few seconds alone.
    const running = await waitFor('the next turn running on its worker, from its own queue', async () => (await ownQueue.getJobs(['active']))[0], 20_000);
    await stack.workers.find((process) => process.name === `worker:${worker}`)!.stop('SIGKILL');
    const killedAt = Date.now();
    const answer = await long;
    const tookMs = Date.now() - killedAt;
    expect(answer.id).toBe(running.id);
    expect(answer.choices[0].message.content!.length).toBeGreaterThan(0);
    expect(answer.choices[0].finish_reason).toMatch(/^(stop|length)$/);
    // Moved by a surviving worker once the dead one's lock expired and it left the list of workers:
    // one job, on the shared queue, run to its end by another worker, its first attempt counted.
    const moved = await servedOnce(answer.id);
    expect(moved).toMatchObject({ queue: completionQueueName(STACK_MODEL) });
    expect(moved.worker).not.toBe(worker);
    expect((await queues.get(completionQueueName(STACK_MODEL))!.getJob(answer.id))!.data).toMatchObject({ schedule: { attemptsBefore: 1 } });
    // Lock (5 s) and listing (6 s) run out together, a sweep follows within 2 s, then the answer is generated again.
    expect(tookMs).toBeLessThan(20_000);
    // Bull Board drops the dead worker's queue (its jobs are on the shared queue now).
    await waitFor("Bull Board to drop the dead worker's queue", async () => !(await boardQueues()).includes(workerQueueName(STACK_MODEL, worker!)), 20_000);
    // The dead worker's queue, with nothing left to run, is deleted GONE_WORKER_QUEUE_KEEP_MS after it died.
    expect(await ownQueue.getJobCountByTypes('wait', 'prioritized', 'active')).toBe(0);
    const listing = new Redis(stack.redis.url);
    try {
      await waitFor(
        'the dead worker to leave the list of own queues',
        async () => (await listing.zscore(workerQueuesKey(STACK_MODEL), worker!)) === null,
        GONE_WORKER_QUEUE_KEEP_MS + 12_000,
      );
      expect(await listing.exists(`${completionQueuePrefix(STACK_MODEL)}:${workerQueueName(STACK_MODEL, worker!)}:meta`)).toBe(0);
    } finally {
      listing.disconnect();
    }
  }, 120_000);

  it('answers the next turn on another worker at once while the worker holding the conversation drains, and lets its running job finish', async () => {
    const key = 'conversation-drained';
    const first = await turn([], 'Who pours the tea?', { prompt_cache_key: key });
    const { worker } = await servedOnce(first.id);
    const holder = stack.workers.find((process) => process.name === `worker:${worker}`)!;
    // A long answer of the same conversation keeps the worker busy while it drains.
    const long = turn([], 'Tell me everything.', { prompt_cache_key: key, max_tokens: 3000 });
    await waitFor('the long answer running on its worker', async () => (await queues.get(workerQueueName(STACK_MODEL, worker!))!.getActiveCount()) > 0);
    // The API's queue gauge counts the job running from the worker's own queue (KEDA scales on it).
    const running = total((await scrape(`${serverRoot(stack.baseUrl)}/metrics`)).samples, 'llm_api_queue_active_jobs', { model: STACK_MODEL });
    expect(running).toBeGreaterThanOrEqual(1);
    const stopped = holder.stop('SIGTERM', 30_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const startedAt = Date.now();
    const next = await turn(
      [
        { role: 'user', content: 'Who pours the tea?' },
        { role: 'assistant', content: first.choices[0].message.content },
      ],
      'And then?',
      { prompt_cache_key: key },
    );
    const tookMs = Date.now() - startedAt;
    expect((await servedOnce(next.id)).worker).not.toBe(worker);
    expect(tookMs).toBeLessThan(AFFINITY_WAIT_MS + 3000);
    const drained = await long;
    expect(drained.choices[0].message.content!.length).toBeGreaterThan(0);
    expect((await servedOnce(drained.id)).worker).toBe(worker);
    await stopped;
  });
});
