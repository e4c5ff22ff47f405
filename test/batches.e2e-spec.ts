import OpenAI, { toFile } from 'openai';
import { BATCH_QUEUE_NAME, BATCH_QUEUE_PREFIX } from '@app/contracts';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type { JobType } from 'bullmq';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isFinished, lineCompletionId } from '@app/api';
import { assertMatchesSchema } from './support/openai-schema';
import { STACK_API_KEY, STACK_MODEL, ServiceStack, waitFor } from './support/service-stack';

const OTHER_KEY = 'sk-another-tenant-0123456789';
const SLOW_MODEL = 'slow-synthetic';
const FEED_WINDOW = 8;

interface OutputLine {
  id: string;
  custom_id: string;
  response: { status_code: number; request_id: string; body: Record<string, unknown> } | null;
  error: { code: string; message: string } | null;
}

type Batch = OpenAI.Batches.Batch;

const line = (customId: string, body: object): string => JSON.stringify({ custom_id: customId, method: 'POST', url: '/v1/chat/completions', body });

/** Whether a job id is one of the batch's line jobs (see lineCompletionId). */
const isLineOf =
  (batchId: string) =>
  (jobId: string | undefined): boolean =>
    jobId?.startsWith(lineCompletionId(batchId, 0).slice(0, -1)) === true;

/** The lines of a result file; none when there is no file. */
async function resultLines(client: OpenAI, id: string | null | undefined): Promise<OutputLine[]> {
  if (!id) return [];
  return (await (await client.files.content(id)).text())
    .trimEnd()
    .split('\n')
    .map((json) => JSON.parse(json) as OutputLine);
}

/** Uploads `text` as a batch input file and creates a batch that runs it. */
async function submitBatch(client: OpenAI, text: string, metadata?: Record<string, string>): Promise<Batch> {
  const file = await client.files.create({ file: await toFile(Buffer.from(text), 'input.jsonl'), purpose: 'batch' });
  return client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h', ...(metadata ? { metadata } : {}) });
}

/** The batch once it has ended, whichever way. */
const settled = (client: OpenAI, id: string, timeoutMs = 60_000): Promise<Batch> =>
  waitFor(
    `batch ${id} to end`,
    async () => {
      const batch = await client.batches.retrieve(id);
      return isFinished(batch.status) ? batch : undefined;
    },
    timeoutMs,
  );

/**
 * A stack of its own for one describe: an API with a files folder of its own and one synthetic
 * worker (`worker`) for SLOW_MODEL, started before its tests and removed after them.
 */
function slowModelStack(name: string, apiEnv: Record<string, string>, worker: Record<string, string>): () => ServiceStack {
  let stack: ServiceStack | undefined;
  let filesDir = '';
  beforeAll(async () => {
    filesDir = mkdtempSync(join(tmpdir(), 'batch-files-'));
    stack = await ServiceStack.start({ name, workers: 0, models: [SLOW_MODEL], apiEnv: { FILES_DIR: filesDir, ...apiEnv } });
    await stack.addWorker({ ENGINE: 'synthetic', ...worker }, SLOW_MODEL);
  }, 90_000);
  afterAll(async () => {
    await stack?.stop();
    rmSync(filesDir, { recursive: true, force: true });
  });
  return () => {
    if (!stack) throw new Error(`the ${name} stack did not start`);
    return stack;
  };
}

/**
 * OpenAI's Batch API through the official client on real processes: files in, a batch that runs
 * its lines on the model's queue below interactive requests, output and error files out. Lines
 * are checked like requests, a batch can be cancelled, and an API or a worker killed mid-batch
 * loses no line and answers none twice.
 */
describe('Batch API', () => {
  let stack: ServiceStack;
  let client: OpenAI;
  let stranger: OpenAI;
  let filesDir: string;

  beforeAll(async () => {
    filesDir = mkdtempSync(join(tmpdir(), 'batch-files-'));
    stack = await ServiceStack.start({
      name: 'batches',
      apiKeys: [STACK_API_KEY, OTHER_KEY],
      models: [STACK_MODEL, SLOW_MODEL],
      parallelSequences: 2,
      // A small feed window, so that these batches are fed in several windows.
      apiEnv: { FILES_DIR: filesDir, BATCH_FEED_WINDOW: String(FEED_WINDOW) },
    });
    await stack.addApi();
    // 30 tokens 10 ms apart: about 0.3 s a line, two at a time on each of two workers.
    const slow = { ENGINE: 'synthetic', SYNTHETIC_TOKENS: '30', SYNTHETIC_TOKEN_INTERVAL_MS: '10', SYNTHETIC_SLOTS: '2' };
    await stack.addWorker(slow, SLOW_MODEL);
    await stack.addWorker(slow, SLOW_MODEL);
    client = new OpenAI({ baseURL: stack.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
    stranger = new OpenAI({ baseURL: stack.baseUrl, apiKey: OTHER_KEY, maxRetries: 0 });
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
    rmSync(filesDir, { recursive: true, force: true });
  });

  const submit = (lines: string[]): Promise<Batch> => submitBatch(client, `${lines.join('\n')}\n`, { suite: 'e2e' });

  it('answers each valid line as the same request would be answered, and each refused one in the error file', async () => {
    const ask = (seed: number, extra: object = {}) => ({
      model: STACK_MODEL,
      messages: [{ role: 'user', content: `Tell me about ${seed}.` }],
      max_tokens: 12,
      temperature: 0,
      seed,
      ...extra,
    });
    const valid = {
      a: ask(1),
      b: ask(2, { n: 2, temperature: 1 }),
      c: ask(3, { response_format: { type: 'json_object' } }),
      d: ask(4, { logprobs: true, top_logprobs: 2 }),
    };
    const created = await submit([
      ...Object.entries(valid).map(([id, body]) => line(id, body)),
      line('bad-temperature', ask(5, { temperature: 7 })),
      line('bad-field', ask(6, { frobnicate: true })),
    ]);
    expect(created).toMatchObject({
      object: 'batch',
      status: 'validating',
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
      metadata: { suite: 'e2e' },
    });
    const batch = await settled(client, created.id);
    expect(batch.status).toBe('completed');
    expect(batch.request_counts).toEqual({ total: 6, completed: 4, failed: 2 });
    expect(batch.usage?.output_tokens).toBeGreaterThan(0);

    const output = await resultLines(client, batch.output_file_id);
    expect(output.map((entry) => entry.custom_id)).toEqual(['a', 'b', 'c', 'd']);
    for (const entry of output) {
      expect(entry.error).toBeNull();
      expect(entry.response?.status_code).toBe(200);
      assertMatchesSchema('CreateChatCompletionResponse', entry.response?.body);
      expect(entry.response?.body.id).toBe(entry.response?.request_id);
      // The same body sent as a plain request gives the same answer (its seed fixes the sampling).
      const plain = await client.chat.completions.create(valid[entry.custom_id as keyof typeof valid] as OpenAI.ChatCompletionCreateParamsNonStreaming);
      expect((entry.response?.body as unknown as OpenAI.ChatCompletion).choices).toEqual(plain.choices);
    }
    const errors = await resultLines(client, batch.error_file_id);
    expect(errors.map((entry) => [entry.custom_id, entry.response?.status_code, (entry.response?.body as { error: { param: string } }).error.param])).toEqual([
      ['bad-temperature', 400, 'temperature'],
      ['bad-field', 400, 'frobnicate'],
    ]);

    expect((await client.batches.list()).data.map((listed) => listed.id)).toContain(batch.id);
    await expect(stranger.batches.retrieve(batch.id)).rejects.toMatchObject({ status: 404 });
    await expect(stranger.batches.cancel(batch.id)).rejects.toMatchObject({ status: 404 });
    expect((await stranger.batches.list()).data).toEqual([]);
    await expect(stranger.files.content(batch.output_file_id ?? '')).rejects.toMatchObject({ status: 404 });
  });

  it('lists batches newest first in creation order, also within one second, and pages on from a cursor', async () => {
    const body = { model: STACK_MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 1 };
    const created: Batch[] = [];
    for (let index = 0; index < 5; index++) created.push(await submit([line(`l-${index}`, body)]));
    const newestFirst = created.map((batch) => batch.id).reverse();
    expect((await client.batches.list({ limit: 5 })).data.map((batch) => batch.id)).toEqual(newestFirst);
    expect((await client.batches.list({ limit: 3, after: newestFirst[1] })).data.map((batch) => batch.id)).toEqual(newestFirst.slice(2));
    await Promise.all(created.map((batch) => settled(client, batch.id)));
  });

  it('fails a batch whose lines repeat a custom_id or break the envelope, naming the lines', async () => {
    const body = { model: STACK_MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 };
    const batch = await settled(
      client,
      (await submit([line('x', body), line('x', body), JSON.stringify({ custom_id: 'y', method: 'GET', url: '/v1/chat/completions', body })])).id,
    );
    expect(batch.status).toBe('failed');
    expect(batch.errors?.data?.map(({ code, line: at }) => [code, at])).toEqual([
      ['duplicate_custom_id', 2],
      ['invalid_request', 3],
    ]);
    expect(batch.output_file_id ?? null).toBeNull();
  });

  it('runs a file saved with a byte-order mark and CRLF line ends, as its upload check read it', async () => {
    const body = { model: STACK_MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 };
    const text = `\uFEFF${line('bom-1', body)}\r\n${line('bom-2', body)}\r\n`;
    const created = await submitBatch(client, text);
    const batch = await settled(client, created.id);
    expect([batch.status, batch.request_counts]).toEqual(['completed', { total: 2, completed: 2, failed: 0 }]);
    expect((await resultLines(client, batch.output_file_id)).map((answer) => answer.custom_id)).toEqual(['bom-1', 'bom-2']);
  });

  it("reports an option the line's engine cannot honour as the 400 naming it", async () => {
    // Admission checks options against the live engines; a batch line meets its engine first on the worker.
    const batch = await settled(client, (await submit([line('lp', { model: SLOW_MODEL, messages: [{ role: 'user', content: 'Hi' }], logprobs: true })])).id);
    expect(batch.request_counts).toEqual({ total: 1, completed: 0, failed: 1 });
    const [failure] = await resultLines(client, batch.error_file_id);
    expect(failure.response?.status_code).toBe(400);
    expect(failure.response?.body).toMatchObject({ error: { type: 'invalid_request_error', param: 'logprobs', code: 'unsupported_parameter' } });
  });

  it('cancels mid-run: what finished is in the output, every other line is batch_cancelled, none is lost', async () => {
    const lines = Array.from({ length: 40 }, (_, index) => line(`line-${index}`, { model: SLOW_MODEL, messages: [{ role: 'user', content: String(index) }] }));
    const created = await submit(lines);
    await waitFor('some lines to finish', async () => ((await client.batches.retrieve(created.id)).request_counts?.completed ?? 0) >= 2, 30_000);
    const cancelling = await client.batches.cancel(created.id);
    expect(cancelling.status).toBe('cancelling');
    const batch = await settled(client, created.id);
    expect(batch.status).toBe('cancelled');
    const output = await resultLines(client, batch.output_file_id);
    const errors = await resultLines(client, batch.error_file_id);
    expect(output.length).toBeGreaterThanOrEqual(2);
    expect(output.length).toBeLessThan(40);
    expect(errors.every((entry) => entry.error?.code === 'batch_cancelled')).toBe(true);
    expect([...output, ...errors].map((entry) => entry.custom_id).sort()).toEqual(lines.map((_, index) => `line-${index}`).sort());
    expect(batch.request_counts).toEqual({ total: 40, completed: output.length, failed: errors.length });
  });

  it('queues none of its lines when cancelled while its file is validated', async () => {
    // Long enough a file that the cancel lands while the coordinator still reads it.
    const body = { model: SLOW_MODEL, messages: [{ role: 'user' as const, content: 'Hi' }] };
    const plain = await client.chat.completions.create(body);
    const created = await submit(Array.from({ length: 30_000 }, (_, index) => line(`v-${index}`, body)));
    const cancelling = await client.batches.cancel(created.id);
    expect(cancelling.status).toBe('cancelling');
    const batch = await settled(client, created.id);
    expect([batch.status, batch.request_counts]).toEqual(['cancelled', { total: 30_000, completed: 0, failed: 30_000 }]);
    // Not one line was added to the model's queue, not even to be taken off again at once.
    const redis = new Redis(stack.redis.url);
    try {
      const events = await redis.xrange(stack.queue(SLOW_MODEL).toKey('events'), '-', '+');
      const addedJobIds = events.filter(([, fields]) => fields[1] === 'added').map(([, fields]) => fields[fields.indexOf('jobId') + 1]);
      expect(addedJobIds).toContain(plain.id); // what an added job looks like there
      expect(addedJobIds.filter(isLineOf(created.id))).toEqual([]);
    } finally {
      redis.disconnect();
    }
  });

  it('takes up again a batch whose coordination job was lost', async () => {
    const lines = Array.from({ length: 20 }, (_, index) => line(`r-${index}`, { model: SLOW_MODEL, messages: [{ role: 'user', content: String(index) }] }));
    const created = await submit(lines);
    const batches = new Queue(BATCH_QUEUE_NAME, { connection: { url: stack.redis.url }, prefix: BATCH_QUEUE_PREFIX });
    try {
      // Removed between two steps, as an operator could, or as if its instance died before queueing it.
      await waitFor('the coordination job to be removed', async () => {
        const job = await batches.getJob(created.id);
        return job?.remove().then(
          () => true,
          () => false, // a step holds it
        );
      });
      expect(['validating', 'in_progress']).toContain((await client.batches.retrieve(created.id)).status);
      const batch = await settled(client, created.id, 60_000);
      expect([batch.status, batch.request_counts]).toEqual(['completed', { total: 20, completed: 20, failed: 0 }]);
    } finally {
      await batches.close();
    }
  });

  it('loses no line and answers none twice when a worker and the coordinating API are killed mid-batch', async () => {
    const lines = Array.from({ length: 60 }, (_, index) => line(`k-${index}`, { model: SLOW_MODEL, messages: [{ role: 'user', content: String(index) }] }));
    const created = await submit(lines);
    await waitFor('the batch to run', async () => ((await client.batches.retrieve(created.id)).request_counts?.completed ?? 0) >= 4, 30_000);
    // Only a window of the batch's lines is in the queue at a time (its file is read on as they end).
    const slowQueue = stack.queue(SLOW_MODEL);
    expect((await slowQueue.getPrioritizedCount()) + (await slowQueue.getActiveCount())).toBeLessThanOrEqual(FEED_WINDOW);
    // The worker with a running line, and the API instance whose coordinator holds the batch.
    await stack.workers.at(-1)?.stop('SIGKILL');
    const batches = new Queue(BATCH_QUEUE_NAME, { connection: { url: stack.redis.url }, prefix: BATCH_QUEUE_PREFIX });
    const coordinator = (await batches.getJob(created.id))?.processedBy ?? '';
    await batches.close();
    const apis = [stack.api, ...stack.extraApis];
    const holder = apis.find((api) => coordinator.includes(`-${api.process.pid}-`));
    expect(holder).toBeDefined();
    await holder?.process.stop('SIGKILL');
    const survivor = apis.find((api) => api !== holder);
    const survivorClient = new OpenAI({ baseURL: survivor?.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
    const batch = await waitFor(
      'the batch to complete on the surviving instance',
      async () => {
        const current = await survivorClient.batches.retrieve(created.id);
        return current.status === 'completed' ? current : undefined;
      },
      60_000,
    );
    expect(batch.request_counts).toEqual({ total: 60, completed: 60, failed: 0 });
    const ids = (await resultLines(survivorClient, batch.output_file_id)).map((answer) => answer.custom_id);
    expect(ids).toEqual(lines.map((_, index) => `k-${index}`));
    expect(batch.error_file_id ?? null).toBeNull();
  });
});

describe('Batch API past its window', () => {
  const stackOf = slowModelStack(
    'batches-expiry',
    { BATCH_COMPLETION_WINDOW_SECONDS: '3' },
    { SYNTHETIC_TOKENS: '30', SYNTHETIC_TOKEN_INTERVAL_MS: '20', SYNTHETIC_SLOTS: '1' },
  );

  it('ends expired with what finished; the lines it never ran are batch_expired', async () => {
    const client = new OpenAI({ baseURL: stackOf().baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
    const lines = Array.from({ length: 30 }, (_, index) => line(`e-${index}`, { model: SLOW_MODEL, messages: [{ role: 'user', content: String(index) }] }));
    const created = await submitBatch(client, lines.join('\n'));
    const batch = await settled(client, created.id, 30_000);
    expect(batch.status).toBe('expired');
    const output = await resultLines(client, batch.output_file_id);
    const errors = await resultLines(client, batch.error_file_id);
    expect(output.length).toBeGreaterThan(0);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.every((entry) => entry.error?.code === 'batch_expired')).toBe(true);
    expect(output.length + errors.length).toBe(30);
    expect(batch.expired_at).toBeGreaterThanOrEqual(batch.expires_at ?? Infinity);
  });
});

describe('Batch API whose input file is deleted mid-run', () => {
  // One slot and a feed window of 8: when the coordinator next reads the file (half the window
  // ended), one line runs and three wait in the queue.
  const stackOf = slowModelStack(
    'batches-missing-file',
    { BATCH_FEED_WINDOW: '8' },
    { SYNTHETIC_TOKENS: '30', SYNTHETIC_TOKEN_INTERVAL_MS: '10', SYNTHETIC_SLOTS: '1' },
  );

  it('fails, naming the file, with every line counted and none of them left queued or running', async () => {
    const stack = stackOf();
    const client = new OpenAI({ baseURL: stack.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
    const lines = Array.from({ length: 40 }, (_, index) => line(`gone-${index}`, { model: SLOW_MODEL, messages: [{ role: 'user', content: String(index) }] }));
    const created = await submitBatch(client, lines.join('\n'));
    await waitFor('some lines to finish', async () => ((await client.batches.retrieve(created.id)).request_counts?.completed ?? 0) >= 2, 30_000);
    // Lines are fed a window at a time, so the file is still needed; deleting it is still the owner's right.
    await client.files.delete(created.input_file_id);
    const batch = await settled(client, created.id);
    expect(batch.status).toBe('failed');
    expect(batch.errors?.data).toEqual([expect.objectContaining({ code: 'input_file_missing', param: 'input_file_id' })]);
    // Without the file no result can name its line, so none is written, and every line not answered has failed.
    expect([batch.output_file_id, batch.error_file_id]).toEqual([null, null]);
    const counts = batch.request_counts ?? { total: 0, completed: 0, failed: 0 };
    expect(counts.completed).toBeGreaterThanOrEqual(2);
    expect([counts.total, counts.completed + counts.failed]).toEqual([40, 40]);
    // Its lines would answer for nobody: the waiting ones left the queue before it failed, the running one is stopped.
    const queue = stack.queue(SLOW_MODEL);
    const linesIn = async (states: JobType[]): Promise<number> => (await queue.getJobs(states)).filter((job) => isLineOf(created.id)(job.id)).length;
    expect(await linesIn(['waiting', 'prioritized', 'delayed'])).toBe(0);
    await waitFor('its running line to stop', async () => (await linesIn(['active'])) === 0, 5000);
  });
});

describe('Batch API whose last worker dies', () => {
  // Long lines (3 s each), so that one is surely running when its worker is killed.
  const stackOf = slowModelStack('batches-dead-worker', {}, { SYNTHETIC_TOKENS: '300', SYNTHETIC_TOKEN_INTERVAL_MS: '10', SYNTHETIC_SLOTS: '2' });

  it('ends cancelled although the line its dead worker held is never found stalled by any worker', async () => {
    const stack = stackOf();
    const client = new OpenAI({ baseURL: stack.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
    const lines = Array.from({ length: 6 }, (_, index) => line(`d-${index}`, { model: SLOW_MODEL, messages: [{ role: 'user', content: String(index) }] }));
    const created = await submitBatch(client, lines.join('\n'));
    const queue = stack.queue(SLOW_MODEL);
    await waitFor('a line to run', async () => (await queue.getActiveCount()) > 0, 30_000);
    // No worker of the model is left to find its job stalled: it stays active, its lock lapses.
    await stack.workers[0].stop('SIGKILL');
    await client.batches.cancel(created.id);
    const batch = await settled(client, created.id, 40_000);
    expect(batch.status).toBe('cancelled');
    expect(batch.request_counts).toEqual({ total: 6, completed: 0, failed: 6 });
    const errors = await resultLines(client, batch.error_file_id);
    expect(errors.map((entry) => [entry.custom_id, entry.error?.code])).toEqual(lines.map((_, index) => [`d-${index}`, 'batch_cancelled']));
  });
});
