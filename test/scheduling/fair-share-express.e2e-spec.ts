import OpenAI from 'openai';
import type { Job, Queue } from 'bullmq';
import { expressQueueName } from '@app/contracts';
import { ServiceStack, waitFor } from '../support/service-stack';
import { basicAuth } from '../support/bull-board-api';
import { serverRoot } from '../operators/prometheus-text';

const HEAVY_KEY = 'sk-express-heavy-0123456789';
const LIGHT_KEY = 'sk-express-light-0123456789';
const SLOW_MODEL = 'slow-synthetic';
const ADMIN_PASSWORD = 'express-board-password';

/**
 * The express lane of fair share (FAIR_SHARE_EXPRESS, EXPRESS_SEQUENCES) through the official
 * client: one worker with one bulk sequence and one express sequence (a synthetic engine: 300
 * tokens 10 ms apart, 3 s for a whole answer). BullMQ's timestamps (processedOn, finishedOn) on
 * each queue say where and when each job ran.
 */
describe('fair share express lane', () => {
  let stack: ServiceStack;
  let shared: Queue;
  let express: Queue;
  let heavy: OpenAI;
  let light: OpenAI;

  beforeAll(async () => {
    stack = await ServiceStack.start({
      name: 'fair-share-express',
      workers: 0,
      apiKeys: [HEAVY_KEY, LIGHT_KEY],
      models: [SLOW_MODEL],
      // A long bound: no job moves from the lane to the shared queue during these tests.
      apiEnv: {
        FAIR_SHARE: 'true',
        FAIR_SHARE_EXPRESS: 'true',
        FAIR_SHARE_EXPRESS_WAIT_MS: '20000',
        PRIORITY_TIER_KEYS: HEAVY_KEY,
        AFFINITY: 'false',
        ADMIN_PASSWORD,
      },
    });
    await stack.addWorker(
      { ENGINE: 'synthetic', SYNTHETIC_TOKENS: '300', SYNTHETIC_TOKEN_INTERVAL_MS: '10', SYNTHETIC_SLOTS: '1', EXPRESS_SEQUENCES: '1' },
      SLOW_MODEL,
    );
    shared = stack.queue(SLOW_MODEL);
    express = stack.queue(SLOW_MODEL, expressQueueName(SLOW_MODEL));
    heavy = new OpenAI({ baseURL: stack.baseUrl, apiKey: HEAVY_KEY, maxRetries: 0 });
    light = new OpenAI({ baseURL: stack.baseUrl, apiKey: LIGHT_KEY, maxRetries: 0 });
  }, 60_000);

  afterAll(async () => {
    await stack?.stop();
  });

  const ask = (client: OpenAI, content: string, options: { maxTokens?: number; tier?: 'priority' | 'default' } = {}) =>
    client.chat.completions.create({ model: SLOW_MODEL, messages: [{ role: 'user', content }], max_tokens: options.maxTokens, service_tier: options.tier });
  const waitingIn = async (queue: Queue) => (await queue.getWaitingCount()) + (await queue.getPrioritizedCount());
  const waiting = async () => (await waitingIn(shared)) + (await waitingIn(express));

  /** The heavy key holds the bulk sequence with a whole answer and queues `count` more behind it. */
  async function heavyBacklog(count: number, tier: 'priority' | 'default' = 'default') {
    const running = ask(heavy, 'long', {});
    await waitFor('the bulk sequence to be busy', async () => (await shared.getActiveCount()) === 1);
    const queued: Array<Promise<OpenAI.ChatCompletion>> = [];
    for (let sent = 0; sent < count; sent++) {
      const before = await waiting();
      queued.push(ask(heavy, `more ${sent}`, { maxTokens: 20, tier }));
      await waitFor('the request to wait', async () => (await waiting()) > before);
    }
    return { running, queued };
  }

  it("starts a light key's request on the express sequence while a backlogged key holds the bulk one, and runs each job once", async () => {
    // The heavy key's first request is under its share (it has been served nothing): it takes the lane.
    const first = await ask(heavy, 'first', { maxTokens: 1 });
    expect(await express.getJob(first.id)).toBeDefined();
    const { running, queued } = await heavyBacklog(3);
    const lightAnswer = await ask(light, 'light', { maxTokens: 20 });
    const heavyAnswers = await Promise.all([running, ...queued]);

    const lightJob = (await express.getJob(lightAnswer.id)) as Job;
    const runningJob = (await shared.getJob(heavyAnswers[0].id)) as Job;
    const queuedJobs = (await Promise.all(heavyAnswers.slice(1).map((answer) => shared.getJob(answer.id)))) as Job[];
    // It started while the bulk sequence was still busy with the heavy key's long answer, before
    // any of the heavy key's waiting requests.
    expect(lightJob.processedOn).toBeGreaterThanOrEqual(runningJob.processedOn!);
    expect(lightJob.processedOn).toBeLessThan(runningJob.finishedOn!);
    for (const job of queuedJobs) expect(lightJob.processedOn).toBeLessThan(job.processedOn!);
    // Each job ran once, on one queue only.
    for (const job of [lightJob, runningJob, ...queuedJobs]) expect(job.attemptsStarted).toBe(1);
    expect(await shared.getJob(lightAnswer.id)).toBeUndefined();
    for (const answer of heavyAnswers) expect(await express.getJob(answer.id)).toBeUndefined();
    expect(lightAnswer.choices[0].finish_reason).toBe('length');
  }, 60_000);

  it('never lets a light default request pass a waiting priority one: it waits on the shared queue in its tier', async () => {
    // All the heavy key was charged has started: under its share again, its next request takes the
    // lane (and holds the express sequence), the one after it the bulk sequence.
    const onLane = ask(heavy, 'long on the lane');
    await waitFor('the express sequence to be busy', async () => (await express.getActiveCount()) === 1);
    // Its first priority request is under its share in that tier and waits on the lane; the second on the shared queue.
    const { running, queued } = await heavyBacklog(2, 'priority');
    expect(await waitingIn(shared)).toBe(1);
    // The operators' gauges count the lane's running job with the shared queue's.
    const metrics = await (await fetch(`${serverRoot(stack.baseUrl)}/metrics`)).text();
    expect(metrics).toMatch(/^llm_api_queue_active_jobs\{model="slow-synthetic"\} 2$/m);
    const lightAnswer = await ask(light, 'light behind priority', { maxTokens: 20 });
    const [, , , priorityAnswer] = await Promise.all([onLane, running, ...queued]);
    const lightJob = (await shared.getJob(lightAnswer.id)) as Job;
    const priorityJob = (await shared.getJob(priorityAnswer.id)) as Job;
    expect(await express.getJob(lightAnswer.id)).toBeUndefined();
    expect(lightJob.processedOn).toBeGreaterThanOrEqual(priorityJob.processedOn!);
  }, 60_000);

  it("lists the model's express lane in Bull Board, with the jobs it ran", async () => {
    const board = `${serverRoot(stack.baseUrl)}/admin/queues/api/queues`;
    const listed = (await (await fetch(board, { headers: { authorization: basicAuth('admin', ADMIN_PASSWORD) } })).json()) as {
      queues: Array<{ name: string; displayName?: string; counts: Record<string, number> }>;
    };
    const lane = listed.queues.find(({ name }) => name === expressQueueName(SLOW_MODEL));
    expect(lane?.displayName).toBe(`${SLOW_MODEL} express`);
    expect(lane?.counts.completed).toBeGreaterThan(0);
  });

  it('counts the jobs it sent to the lane', async () => {
    const text = await (await fetch(`${serverRoot(stack.baseUrl)}/metrics`)).text();
    expect(text).toMatch(/llm_api_fair_share_express_total\{model="slow-synthetic",outcome="placed"\} [1-9]/);
  });
});

describe('fair share express lane without express sequences', () => {
  let stack: ServiceStack;

  beforeAll(async () => {
    stack = await ServiceStack.start({
      name: 'fair-share-express-fallback',
      workers: 0,
      apiKeys: [LIGHT_KEY],
      models: [SLOW_MODEL],
      apiEnv: { FAIR_SHARE: 'true', FAIR_SHARE_EXPRESS: 'true', FAIR_SHARE_EXPRESS_WAIT_MS: '300', AFFINITY: 'false' },
    });
    // No EXPRESS_SEQUENCES: nothing takes the lane.
    await stack.addWorker({ ENGINE: 'synthetic', SYNTHETIC_TOKENS: '300', SYNTHETIC_TOKEN_INTERVAL_MS: '10', SYNTHETIC_SLOTS: '1' }, SLOW_MODEL);
  }, 60_000);

  afterAll(async () => {
    await stack?.stop();
  });

  it('moves a job its lane did not start within the bound to the shared queue, where it runs once', async () => {
    const light = new OpenAI({ baseURL: stack.baseUrl, apiKey: LIGHT_KEY, maxRetries: 0 });
    const answer = await light.chat.completions.create({ model: SLOW_MODEL, messages: [{ role: 'user', content: 'light' }], max_tokens: 5 });
    const job = (await stack.queue(SLOW_MODEL).getJob(answer.id)) as Job;
    expect(job.attemptsStarted).toBe(1);
    // Added to the shared queue only after the bound on the lane.
    expect(job.timestamp - (job.data as { schedule: { acceptedAt: number } }).schedule.acceptedAt).toBeGreaterThanOrEqual(300);
    expect(await stack.queue(SLOW_MODEL, expressQueueName(SLOW_MODEL)).getJob(answer.id)).toBeUndefined();
    const text = await (await fetch(`${serverRoot(stack.baseUrl)}/metrics`)).text();
    expect(text).toMatch(/llm_api_fair_share_express_total\{model="slow-synthetic",outcome="fallback"\} 1/);
  }, 30_000);
});
