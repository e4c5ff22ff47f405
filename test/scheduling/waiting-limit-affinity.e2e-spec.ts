import { ANNOUNCE_INTERVAL_MS, completionQueuePrefix, workerQueueName } from '@app/contracts';
import { Redis } from 'ioredis';
import { serverRoot } from '../operators/prometheus-text';
import { STACK_API_KEY, ServiceStack, waitFor } from '../support/service-stack';

const MODEL = 'slow-affinity';
const LIMIT = 4;
const WORKERS = ['waiting-limit-affinity-worker-1', 'waiting-limit-affinity-worker-2'];
const SEQUENCES = 4;

/**
 * MAX_WAITING_JOBS with affinity on (the default): two workers of four sequences (a synthetic
 * engine: 10 s answers), every sequence busy and the line full. A burst of 100, half of them
 * continuing conversations a worker holds (own-queue placements), is refused before the first
 * byte, and the jobs waiting anywhere in the model's queues (shared, own, taken into a worker's
 * slot gate) never pass the limit plus one per worker. While the line stays full, every route
 * that queues a job is refused before its body is validated, until room comes back.
 */
describe('the waiting limit with affinity on', () => {
  let stack: ServiceStack;
  let redis: Redis;
  const open: AbortController[] = [];

  beforeAll(async () => {
    stack = await ServiceStack.start({ name: 'waiting-limit-affinity', workers: 0, models: [MODEL], apiEnv: { MAX_WAITING_JOBS: String(LIMIT) } });
    const synthetic = { ENGINE: 'synthetic', SYNTHETIC_TOKENS: '1000', SYNTHETIC_TOKEN_INTERVAL_MS: '10', SYNTHETIC_SLOTS: String(SEQUENCES) };
    for (const workerId of WORKERS) await stack.addWorker({ ...synthetic, WORKER_ID: workerId }, MODEL);
    redis = new Redis(stack.redis.url);
    // The API counts the live workers' sequences from their announcements, read every second or so.
    await new Promise((resolve) => setTimeout(resolve, 2 * ANNOUNCE_INTERVAL_MS));
  }, 60_000);
  afterAll(async () => {
    for (const controller of open) controller.abort();
    redis?.disconnect();
    await stack?.stop();
  });

  /** Sends a streamed request; resolves with its status once the headers come (a refusal at once). */
  const send = (conversation: string): Promise<{ status: number; body: Promise<string> }> => {
    const controller = new AbortController();
    open.push(controller);
    return fetch(`${stack.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${STACK_API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, stream: true, prompt_cache_key: conversation, messages: [{ role: 'user', content: conversation }] }),
      signal: controller.signal,
    })
      .then((response) => ({ status: response.status, body: response.text().catch(() => '') }))
      .catch(() => ({ status: -1, body: Promise.resolve('') })); // aborted at the end
  };

  /** The model's jobs that wait anywhere: its shared queue, the workers' own queues, and taken beyond their sequences. */
  const waitingAnywhere = async (): Promise<number> => {
    const shared = stack.queue(MODEL);
    const own = WORKERS.map((workerId) => stack.queue(MODEL, workerQueueName(MODEL, workerId)));
    let waiting = 0;
    let active = 0;
    for (const queue of [shared, ...own]) {
      waiting += (await queue.getWaitingCount()) + (await queue.getPrioritizedCount());
      active += await queue.getActiveCount();
    }
    return waiting + Math.max(0, active - WORKERS.length * SEQUENCES);
  };

  it('refuses a burst of 100 into a full line with queue_full before the first byte, whatever the placement', async () => {
    // Every sequence busy, each answer a conversation its worker now holds (the affinity map).
    const busy = Array.from({ length: WORKERS.length * SEQUENCES }, (_, index) => `conversation ${index}`);
    // One at a time: each has its sequence (its headers come with its first chunk) before the next
    // is sent, as more at once would wait together beyond the limit.
    const running: number[] = [];
    for (const conversation of busy) running.push((await send(conversation)).status);
    expect(running).toEqual(busy.map(() => 200));
    const recorded = async () => (await redis.keys(`${completionQueuePrefix(MODEL)}:affinity:*`)).length;
    await waitFor('the busy answers to be recorded for affinity', async () => (await recorded()) >= busy.length, 10_000);
    // The line full: LIMIT more wait, continuing conversations, so on their workers' own queues,
    // where the workers' own consumers take them into their slot gates (active in BullMQ).
    for (let index = 0; index < LIMIT; index++) void send(busy[index]);
    await waitFor('the line to be full', async () => (await waitingAnywhere()) >= LIMIT);

    let most = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        most = Math.max(most, await waitingAnywhere());
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
    // An admitted request answers nothing until its job starts (seconds away): it counts as not refused.
    let timer: NodeJS.Timeout | undefined;
    const notYet = new Promise<{ status: number; body: Promise<string> }>((resolve) => {
      timer = setTimeout(() => resolve({ status: 0, body: Promise.resolve('') }), 3000);
    });
    const burst = await Promise.all(
      Array.from({ length: 100 }, (_, index) => Promise.race([send(index % 2 === 0 ? busy[index % busy.length] : `new ${index}`), notYet])),
    );
    clearTimeout(timer);
    sampling = false;
    await sampler;
    most = Math.max(most, await waitingAnywhere());

    const refused = burst.filter(({ status }) => status === 503);
    const codes = await Promise.all(refused.map(async ({ body }) => (JSON.parse(await body) as { error: { code: string } }).error.code));
    console.log(`burst of 100 into a full line: ${codes.filter((code) => code === 'queue_full').length} refused queue_full, at most ${most} waiting anywhere`);
    expect(codes.filter((code) => code === 'queue_full').length).toBeGreaterThanOrEqual(95);
    expect(most).toBeLessThanOrEqual(LIMIT + WORKERS.length);
  }, 60_000);

  /** Posts `body` to `url`; resolves with its status, or 0 when none came within `ms` (admitted: a job answers nothing before it starts). */
  const statusOf = (url: string, body: object, ms = 1000): Promise<number> => {
    const controller = new AbortController();
    open.push(controller);
    const answered = fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${STACK_API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: controller.signal,
    }).then(async (response) => {
      expect(response.status === 503 ? ((await response.json()) as { error: { code: string } }).error.code : 'queue_full').toBe('queue_full');
      return response.status;
    });
    return Promise.race([answered, new Promise<number>((resolve) => setTimeout(() => resolve(0), ms))]);
  };

  it('refuses every queued route at once while the line stays full, before the body is validated, and lets the first request in once there is room', async () => {
    // The line the burst above found full stays so until the busy answers end (10 s after they began).
    expect(await waitingAnywhere()).toBeGreaterThanOrEqual(LIMIT);
    const v1 = stack.baseUrl;
    const hello = [{ role: 'user', content: 'Hello' }];
    // The first refusal comes from the add; the guard counts the line for the requests after it.
    expect(await statusOf(`${v1}/chat/completions`, { model: MODEL, messages: hello })).toBe(503);
    const statuses = await Promise.all([
      statusOf(`${v1}/chat/completions`, { model: MODEL, messages: 'not a list of messages' }),
      statusOf(`${v1}/responses`, { model: MODEL, input: 'Hello' }),
      statusOf(`${v1}/responses/input_tokens`, { model: MODEL, input: 'Hello' }),
      statusOf(`${v1}/completions`, { model: MODEL, prompt: 'Once upon a time' }),
      statusOf(`${v1}/embeddings`, { model: MODEL, input: 'Once upon a time' }),
      statusOf(`${serverRoot(v1)}/tokenize`, { model: MODEL, prompt: 'Once upon a time' }),
    ]);
    expect(statuses).toEqual([503, 503, 503, 503, 503, 503]);
    // Anything but a served model's request takes its own path: a model nobody serves is still a 404.
    expect(await statusOf(`${v1}/chat/completions`, { model: 'no-such-model', messages: hello })).toBe(404);
    // Requests 100 ms apart until one is let in: the first after room came back is, though the line
    // was found full less than a second before (the guard counts it again rather than remember it).
    let lastRefusedAt = Date.now();
    for (;;) {
      const sentAt = Date.now();
      const status = await statusOf(`${v1}/chat/completions`, { model: MODEL, messages: hello, stream: true });
      // Admitted: it waits for a sequence (no status yet), or one was free and it streams.
      if (status === 0 || status === 200) {
        expect(sentAt - lastRefusedAt).toBeLessThan(1000);
        break;
      }
      expect(status).toBe(503);
      lastRefusedAt = Date.now();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }, 60_000);
});
