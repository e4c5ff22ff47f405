import OpenAI, { toFile } from 'openai';
import { BATCH_QUEUE_NAME, BATCH_QUEUE_PREFIX } from '@app/contracts';
import { Queue } from 'bullmq';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { isFinished } from '@app/api';
import { ManagedProcess } from '../tools/local-stack/managed-process';
import { REPO_ROOT } from '../tools/local-stack/services';
import { STACK_API_KEY, STACK_MODEL, ServiceStack, waitFor } from './support/service-stack';

const COORDINATOR_ENTRY = resolve(REPO_ROOT, 'dist/apps/api/apps/api/src/batch-coordinator.main.js');

/**
 * The batch coordinator in a process of its own (`npm run start:batch-coordinator`) beside an API
 * that does not coordinate (BATCH_COORDINATOR=false): a batch submitted to the API is run by the
 * coordinator process, which stops cleanly on SIGTERM.
 */
describe('the batch coordinator as its own process', () => {
  let stack: ServiceStack | undefined;
  let coordinator: ManagedProcess | undefined;
  let batches: Queue | undefined;
  let filesDir = '';

  beforeAll(async () => {
    filesDir = mkdtempSync(join(tmpdir(), 'batch-coordinator-files-'));
    stack = await ServiceStack.start({ name: 'batch-coordinator', apiEnv: { FILES_DIR: filesDir, BATCH_COORDINATOR: 'false' } });
    coordinator = new ManagedProcess({
      name: 'batch-coordinator',
      command: process.execPath,
      args: [COORDINATOR_ENTRY],
      // The API's environment: the same Redis, keys, models and files.
      env: { ...process.env, REDIS_URL: stack.redis.url, API_KEYS: STACK_API_KEY, MODELS: STACK_MODEL, FILES_DIR: filesDir },
      logFile: resolve(REPO_ROOT, 'test-artifacts/logs/batch-coordinator.log'),
    });
    await coordinator.waitForOutput(/batch coordinator running/, 30_000);
    batches = new Queue(BATCH_QUEUE_NAME, { connection: { url: stack.redis.url }, prefix: BATCH_QUEUE_PREFIX });
  }, 90_000);

  afterAll(async () => {
    await batches?.close();
    await coordinator?.stop('SIGKILL');
    await stack?.stop();
    rmSync(filesDir, { recursive: true, force: true });
  });

  it('runs a batch submitted to an API that does not coordinate', async () => {
    const client = new OpenAI({ baseURL: stack?.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
    const lines = ['a', 'b'].map((customId) =>
      JSON.stringify({
        custom_id: customId,
        method: 'POST',
        url: '/v1/chat/completions',
        body: { model: STACK_MODEL, messages: [{ role: 'user', content: `Say ${customId}` }], max_tokens: 4 },
      }),
    );
    const file = await client.files.create({ file: await toFile(Buffer.from(lines.join('\n')), 'input.jsonl'), purpose: 'batch' });
    const created = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    const ended = await waitFor(
      `batch ${created.id} to end`,
      async () => {
        const batch = await client.batches.retrieve(created.id);
        return isFinished(batch.status) ? batch : undefined;
      },
      60_000,
    );
    expect(ended).toMatchObject({ status: 'completed', request_counts: { total: 2, completed: 2, failed: 0 } });
    const output = (await (await client.files.content(ended.output_file_id ?? '')).text()).trimEnd().split('\n');
    expect(output.map((text) => (JSON.parse(text) as { custom_id: string }).custom_id)).toEqual(['a', 'b']);
    // The coordinator process took the batch's steps: the API has no batch worker.
    const job = await batches?.getJob(created.id);
    const [, instance] = coordinator?.recentOutput.match(/batch coordinator running: (\S+)/) ?? [];
    expect(job?.processedBy).toBe(instance);
  });

  it('stops cleanly on SIGTERM', async () => {
    await coordinator?.stop('SIGTERM', 15_000);
    // Nest raises the signal again once its shutdown hooks ran (as the API does); SIGKILL would mean it hung.
    expect(coordinator?.child.signalCode).toBe('SIGTERM');
    // Its queue worker was closed, not left to time out in Redis.
    expect(await batches?.getWorkers()).toEqual([]);
  });
});
