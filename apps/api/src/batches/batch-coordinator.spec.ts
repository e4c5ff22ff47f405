import type { ApiEnv } from '@app/config';
import type { RedisClient } from '@app/redis';
import type { Job } from 'bullmq';
import { Readable } from 'node:stream';
import type { CompletionQueues } from '../pipeline/completion-queues';
import type { FilesService, NewFile } from '../files/files.service';
import type { ModelRegistry } from '../models/model-registry';
import { chatBatchLines } from '../openai/chat/chat-batch-lines';
import { BatchLineDoors } from './batch-line-doors';
import { BatchResultFiles } from './batch-result-files';
import { BatchCoordinator } from './batch-coordinator';
import type { BatchRecord } from './batch-object';
import type { BatchQueue, BatchJobData } from './batch-queue';
import type { BatchRecords, LineOutcome } from './batch-records';

const BODY = { model: 'm', messages: [{ role: 'user', content: 'Hi' }] };
const INPUT = ['a', 'b'].map((customId) => JSON.stringify({ custom_id: customId, method: 'POST', url: '/v1/chat/completions', body: BODY }));
const OUTCOMES: LineOutcome[] = [
  { answer: { parts: [{ type: 'text', choice: 0, text: 'Hello' }], finishReason: 'stop', usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } } },
  { failure: { refused: { status: 400, body: { error: { message: 'bad', type: 'invalid_request_error', param: 'temperature', code: null } } } } },
];

/**
 * A finalizing batch of two lines (one answered, one refused) whose record lives in memory and
 * whose result files go to a stand-in storage that can fail once: what the coordinator's step
 * writes, and what it saves, when a step is taken again after a storage error.
 */
function setUp() {
  let saved: BatchRecord = {
    id: 'batch_0123456789abcdefghijklmn',
    object: 'batch',
    endpoint: '/v1/chat/completions',
    model: 'm',
    errors: null,
    input_file_id: 'file-input',
    completion_window: '24h',
    status: 'finalizing',
    output_file_id: null,
    error_file_id: null,
    created_at: 1,
    in_progress_at: 1,
    expires_at: 86_401,
    finalizing_at: 2,
    completed_at: null,
    failed_at: null,
    expired_at: null,
    cancelling_at: null,
    cancelled_at: null,
    request_counts: { total: 2, completed: 1, failed: 1 },
    metadata: null,
    owner: 'key-1',
    fed: { index: 2, line: 2, byte: 0 },
  };
  const records = {
    find: () => Promise.resolve(structuredClone(saved)),
    save: (record: BatchRecord) => {
      saved = structuredClone(record);
      return Promise.resolve();
    },
    counts: () => Promise.resolve({ answered: 1, failed: 1 }),
    outcomes: (_id: string, indexes: number[]) => Promise.resolve(indexes.map((index) => OUTCOMES[index])),
  };
  const written: string[] = [];
  const storage = { failNextErrorFile: false };
  const files = {
    lines: () => Readable.from(INPUT.map((text, index) => ({ line: index + 1, text, end: 0 }))),
    async create(_owner: string, file: NewFile) {
      for await (const chunk of file.body as Readable) void chunk; // read to its end, as storage would
      if (file.filename.endsWith('_error.jsonl') && storage.failNextErrorFile) {
        storage.failNextErrorFile = false;
        throw new Error('storage is away for a moment');
      }
      written.push(file.filename);
      return { id: `file-${written.length}` };
    },
  };
  const doors = new BatchLineDoors([chatBatchLines]);
  const coordinator = new BatchCoordinator(
    { BATCH_RETENTION_SECONDS: 3600 } as ApiEnv,
    records as unknown as BatchRecords,
    files as unknown as FilesService,
    {} as CompletionQueues,
    {} as ModelRegistry,
    {} as BatchQueue,
    doors,
    new BatchResultFiles(records as unknown as BatchRecords, files as unknown as FilesService, doors),
    {} as RedisClient,
    'api-instance-under-test',
    // Steps are taken by hand here: no queue worker is started.
    () => {
      throw new Error('no queue worker in this test');
    },
    false,
  );
  // The worker's processor; without a token the step does not schedule its next tick.
  const step = (): Promise<void> =>
    (coordinator as unknown as { step(job: Job<BatchJobData>, token?: string): Promise<void> }).step({ data: { batchId: saved.id } } as Job<BatchJobData>);
  return { step, storage, written, record: () => saved };
}

describe('BatchCoordinator finalize', () => {
  it('writes the output and the error file once each, in input order, and ends completed', async () => {
    const { step, written, record } = setUp();
    await step();
    expect(written).toEqual(['batch_0123456789abcdefghijklmn_output.jsonl', 'batch_0123456789abcdefghijklmn_error.jsonl']);
    expect(record()).toMatchObject({
      status: 'completed',
      output_file_id: 'file-1',
      error_file_id: 'file-2',
      request_counts: { total: 2, completed: 1, failed: 1 },
    });
    expect(record().usage).toMatchObject({ input_tokens: 3, output_tokens: 1, total_tokens: 4 });
  });

  it('does not write the output file again when the step is retried after the error file failed', async () => {
    const { step, storage, written, record } = setUp();
    storage.failNextErrorFile = true;
    await expect(step()).rejects.toThrow('storage is away');
    // The output file's id was saved as soon as it was written: the retried step goes on from there.
    expect(record()).toMatchObject({ status: 'finalizing', output_file_id: 'file-1', error_file_id: null });
    await step();
    expect(written).toEqual(['batch_0123456789abcdefghijklmn_output.jsonl', 'batch_0123456789abcdefghijklmn_error.jsonl']);
    expect(record()).toMatchObject({
      status: 'completed',
      output_file_id: 'file-1',
      error_file_id: 'file-2',
      request_counts: { total: 2, completed: 1, failed: 1 },
    });
    expect(record().usage).toMatchObject({ output_tokens: 1 });
  });
});
