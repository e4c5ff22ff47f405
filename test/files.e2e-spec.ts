import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { ApiEnv, loadEnv } from '@app/config';
import { closeRedis, connectRedis, createRedisConnection } from '@app/redis';
import type { RedisClient } from '@app/redis';
import type { FauxqsServer } from 'fauxqs' with { 'resolution-mode': 'import' };
import { Redis } from 'ioredis';
import OpenAI, { toFile } from 'openai';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { newFileId, FileRecords, FilesService, LocalFileStorage } from '@app/api';
import type { FileRecord } from '@app/api';
import type { RunningApi } from '../tools/local-stack/services';
import { REPO_ROOT, startApi } from '../tools/local-stack/services';
import { assertMatchesSchema } from './support/openai-schema';
import { e2eStack } from './support/stack-env';

const MAX_BYTES = 64 * 1024;
const MAX_LINES = 500;

/** What ApiKeyGuard calls the owner of a key: a prefix of its SHA-256. */
const ownerOf = (key: string): string => createHash('sha256').update(key).digest('hex').slice(0, 24);

const jsonl = (count: number, tag: string): string =>
  Array.from({ length: count }, (_, i) =>
    JSON.stringify({ custom_id: `${tag}-${i}`, method: 'POST', url: '/v1/chat/completions', body: { model: 'tiny-chat' } }),
  )
    .map((line) => `${line}\n`)
    .join('');

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/**
 * OpenAI's Files API on a real API process (its own, with small limits and its own FILES_DIR)
 * over the suite's Redis, through the official `openai` client and raw HTTP. Two API keys of
 * this run's own, so that listings hold only this test's files.
 */
describe('Files API (/v1/files)', () => {
  const stack = e2eStack();
  const keyA = `sk-files-a-${randomBytes(8).toString('hex')}`;
  const keyB = `sk-files-b-${randomBytes(8).toString('hex')}`;
  let dir: string;
  let api: RunningApi;
  let a: OpenAI;
  let b: OpenAI;
  let redis: Redis;

  const upload = async (client: OpenAI, body: string, name = 'in.jsonl'): Promise<OpenAI.FileObject> =>
    client.files.create({ file: await toFile(Buffer.from(body), name), purpose: 'batch' });

  /** What the client's call was refused with: status and OpenAI's error body. */
  async function refusal(call: Promise<unknown>): Promise<{ status: number; body: ErrorBody }> {
    const error = await call.then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    if (!(error instanceof OpenAI.APIError)) throw new Error(`expected an APIError, got ${String(error)}`);
    const body: unknown = { error: error.error as unknown };
    assertMatchesSchema('ErrorResponse', body);
    return { status: Number(error.status), body: body as ErrorBody };
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'files-e2e-'));
    api = await startApi({
      redisUrl: stack.redisUrl,
      apiKeys: [keyA, keyB],
      models: [stack.model],
      env: { FILES_DIR: dir, FILES_MAX_BYTES: String(MAX_BYTES), FILES_MAX_LINES: String(MAX_LINES) },
      logFile: resolve(REPO_ROOT, 'test-artifacts/logs/files-api.log'),
    });
    a = new OpenAI({ baseURL: api.baseUrl, apiKey: keyA, maxRetries: 0 });
    b = new OpenAI({ baseURL: api.baseUrl, apiKey: keyB, maxRetries: 0 });
    redis = new Redis(stack.redisUrl);
  });
  afterAll(async () => {
    await redis.quit();
    await api.process.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('uploads a batch input file and answers OpenAI’s File object', async () => {
    const body = jsonl(3, 'create');
    const file = await upload(a, body);
    expect(file).toEqual({
      id: expect.stringMatching(/^file-[A-Za-z0-9]{24}$/) as string,
      object: 'file',
      bytes: Buffer.byteLength(body),
      created_at: expect.any(Number) as number,
      filename: 'in.jsonl',
      purpose: 'batch',
      status: 'processed',
      expires_at: null,
      status_details: null,
    });
    expect(Math.abs(file.created_at - Date.now() / 1000)).toBeLessThan(60);
    expect(await a.files.retrieve(file.id)).toEqual(file);
  });

  it('gives back the very bytes uploaded, from the local folder and not from Redis', async () => {
    const marker = `marker-${randomBytes(8).toString('hex')}`;
    const body = `${jsonl(2, marker)}\n{"é": "ü", "emoji": "😀"}\r\n`;
    const file = await upload(a, body);

    const content = await a.files.content(file.id);
    expect(content.headers.get('content-type')).toBe('application/octet-stream');
    expect(await content.text()).toBe(body);

    expect(readdirSync(dir)).toContain(file.id);
    expect(readFileSync(join(dir, file.id), 'utf8')).toBe(body);
    // Redis holds the metadata only: five fields, none of them the body.
    const metadata = await redis.hgetall(`files:{${file.id}}`);
    expect(Object.keys(metadata).sort()).toEqual(['bytes', 'created_at', 'filename', 'owner', 'purpose']);
    for (const key of await redis.keys('files:*')) {
      const values = (await redis.type(key)) === 'hash' ? Object.values(await redis.hgetall(key)) : await redis.zrange(key, '0', '-1');
      expect(values.join('\n')).not.toContain(marker);
    }
  });

  it('lists newest first in pages, and the client’s auto-pagination walks every page', async () => {
    const created: string[] = [];
    for (let i = 0; i < 5; i++) created.push((await upload(b, jsonl(1, `list-${i}`), `list-${i}.jsonl`)).id);
    const newestFirst = [...created].reverse();

    const first = await b.files.list({ limit: 2 });
    expect(first.data.map((file) => file.id)).toEqual(newestFirst.slice(0, 2));
    expect(first.has_more).toBe(true);
    const raw = (await (await fetch(`${api.baseUrl}/files?limit=2`, { headers: { authorization: `Bearer ${keyB}` } })).json()) as Record<string, unknown>;
    expect(raw).toEqual({ object: 'list', data: first.data, first_id: newestFirst[0], last_id: newestFirst[1], has_more: true });

    const walked: string[] = [];
    for await (const file of b.files.list({ limit: 2 })) walked.push(file.id);
    expect(walked).toEqual(newestFirst);

    const oldestFirst: string[] = [];
    for await (const file of b.files.list({ limit: 3, order: 'asc' })) oldestFirst.push(file.id);
    expect(oldestFirst).toEqual(created);

    const last = await b.files.list({ limit: 2, after: newestFirst[3] });
    expect(last.data.map((file) => file.id)).toEqual([newestFirst[4]]);
    expect(last.has_more).toBe(false);
    expect((await b.files.list({ purpose: 'batch_output' })).data).toEqual([]);
  });

  it('keeps each key’s files its own: another key gets 404 and does not list them', async () => {
    const file = await upload(a, jsonl(1, 'private'));
    for (const call of [b.files.retrieve(file.id), b.files.content(file.id), b.files.delete(file.id)]) {
      const { status, body } = await refusal(call);
      expect(status).toBe(404);
      expect(body.error).toEqual({ message: `No such File object: ${file.id}`, type: 'invalid_request_error', param: null, code: 'file_not_found' });
    }
    const seenByB: string[] = [];
    for await (const listed of b.files.list()) seenByB.push(listed.id);
    expect(seenByB).not.toContain(file.id);
    // Still there for its owner, untouched by B's delete.
    expect((await a.files.retrieve(file.id)).id).toBe(file.id);
    expect(existsSync(join(dir, file.id))).toBe(true);
  });

  it('deletes a file: OpenAI’s answer, then 404, its body and metadata gone', async () => {
    const file = await upload(a, jsonl(1, 'delete'));
    expect(await a.files.delete(file.id)).toEqual({ id: file.id, object: 'file', deleted: true });
    expect((await refusal(a.files.retrieve(file.id))).status).toBe(404);
    expect((await refusal(a.files.content(file.id))).status).toBe(404);
    expect((await refusal(a.files.delete(file.id))).status).toBe(404);
    expect(existsSync(join(dir, file.id))).toBe(false);
    expect(await redis.exists(`files:{${file.id}}`)).toBe(0);
    const listed: string[] = [];
    for await (const each of a.files.list()) listed.push(each.id);
    expect(listed).not.toContain(file.id);
  });

  it('accepts only purpose batch, naming `purpose`, and stores nothing', async () => {
    const before = readdirSync(dir).length;
    const { status, body } = await refusal(a.files.create({ file: await toFile(Buffer.from(jsonl(1, 'p')), 'in.jsonl'), purpose: 'fine-tune' }));
    expect(status).toBe(400);
    expect(body.error).toMatchObject({ type: 'invalid_request_error', param: 'purpose' });
    expect(body.error.message).toMatch(/fine-tune/);
    expect(readdirSync(dir)).toHaveLength(before);
  });

  it('refuses a line that is not JSON with a 400 naming `file` and the line, and stores nothing', async () => {
    const before = readdirSync(dir).length;
    const { status, body } = await refusal(upload(a, `${jsonl(2, 'bad')}{"custom_id": "x", oops}\n${jsonl(1, 'after')}`));
    expect(status).toBe(400);
    expect(body.error).toMatchObject({ type: 'invalid_request_error', param: 'file' });
    expect(body.error.message).toMatch(/^Line 3 of the file is not valid JSON/);
    expect(readdirSync(dir)).toHaveLength(before);
  });

  it('refuses more than FILES_MAX_LINES requests, naming the first line too many', async () => {
    const { status, body } = await refusal(upload(a, jsonl(MAX_LINES + 1, 'lines')));
    expect(status).toBe(400);
    expect(body.error.param).toBe('file');
    expect(body.error.message).toMatch(new RegExp(`more than ${MAX_LINES} requests \\(line ${MAX_LINES + 1}\\)`));
  });

  it.each([
    ['just over FILES_MAX_BYTES', MAX_BYTES + 1],
    ['far over it (8 MiB)', 8 * 1024 * 1024],
  ])('answers 413 naming `file` for a file %s, and stores nothing', async (_name, size) => {
    const line = `${JSON.stringify({ custom_id: 'big', body: 'x'.repeat(1000) })}\n`;
    const body = line.repeat(Math.ceil(size / line.length)).slice(0, size - 1) + '\n';
    const before = readdirSync(dir).length;
    const started = Date.now();
    const { status, body: error } = await refusal(upload(a, body));
    expect(status).toBe(413);
    expect(error.error).toMatchObject({ param: 'file', code: 'request_too_large' });
    expect(error.error.message).toMatch(new RegExp(`larger than the limit of ${MAX_BYTES} bytes`));
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(readdirSync(dir)).toHaveLength(before);
    // And the API goes on answering.
    expect((await upload(a, jsonl(1, 'after-413'))).bytes).toBeGreaterThan(0);
  });

  it('refuses forms without a file, without a purpose, with other fields, or not multipart at all', async () => {
    const post = async (body: FormData | string, headers: Record<string, string> = {}): Promise<{ status: number; body: ErrorBody }> => {
      const response = await fetch(`${api.baseUrl}/files`, { method: 'POST', headers: { authorization: `Bearer ${keyA}`, ...headers }, body });
      const json = (await response.json()) as ErrorBody;
      assertMatchesSchema('ErrorResponse', json);
      return { status: response.status, body: json };
    };
    const form = (fields: Record<string, string | Blob>): FormData => {
      const data = new FormData();
      for (const [name, value] of Object.entries(fields)) data.append(name, value, ...(value instanceof Blob ? ['in.jsonl'] : []));
      return data;
    };
    const file = new Blob([jsonl(1, 'form')]);
    expect(await post(form({ purpose: 'batch' }))).toMatchObject({ status: 400, body: { error: { param: 'file' } } });
    expect(await post(form({ file }))).toMatchObject({ status: 400, body: { error: { param: 'purpose' } } });
    expect(await post(form({ purpose: 'batch', file: jsonl(1, 'text') }))).toMatchObject({ status: 400, body: { error: { param: 'file' } } });
    expect(await post(form({ purpose: 'batch', file, expires_after: '3600' }))).toMatchObject({ status: 400, body: { error: { param: 'expires_after' } } });
    expect(await post(JSON.stringify({ purpose: 'batch' }), { 'content-type': 'application/json' })).toMatchObject({
      status: 400,
      body: { error: { message: expect.stringMatching(/multipart\/form-data/) as string } },
    });
  });

  it('answers 401 without a valid key and 400 for a bad listing query, in OpenAI’s shape', async () => {
    const anonymous = new OpenAI({ baseURL: api.baseUrl, apiKey: 'sk-not-a-configured-key', maxRetries: 0 });
    expect((await refusal(anonymous.files.list())).status).toBe(401);
    for (const [query, param] of [
      [{ limit: 0 }, 'limit'],
      [{ limit: 10_001 }, 'limit'],
      [{ order: 'sideways' }, 'order'],
      [{ purpose: 'nonsense' }, 'purpose'],
      [{ after: 'file-not-an-id' }, 'after'],
    ] as const) {
      const { status, body } = await refusal(a.files.list(query as OpenAI.FileListParams));
      expect(status).toBe(400);
      expect(body.error.param).toBe(param);
    }
  });

  /** What the batch module will do: write outputs and read inputs through FilesService, beside the HTTP API. */
  describe('FilesService, used by other modules', () => {
    let commands: RedisClient;
    let service: FilesService;
    let records: FileRecords;

    beforeAll(async () => {
      commands = await connectRedis(createRedisConnection({ kind: 'standalone', url: stack.redisUrl }, 'commands', 'files-e2e'));
      const env = loadEnv(ApiEnv, { API_KEYS: keyA, FILES_DIR: dir, FILES_MAX_BYTES: String(MAX_BYTES), FILES_MAX_LINES: String(MAX_LINES) });
      records = new FileRecords(commands);
      service = new FilesService(env, records, new LocalFileStorage(env.FILES_DIR));
    });
    afterAll(() => closeRedis(commands));

    it('writes a batch_output file that its owner lists by purpose and downloads over HTTP', async () => {
      const output = `${JSON.stringify({ id: 'batch_req_1', custom_id: 'a', response: { status_code: 200 } })}\n`;
      const written = await service.create(ownerOf(keyA), { filename: 'batch_out.jsonl', purpose: 'batch_output', body: Readable.from([Buffer.from(output)]) });
      expect(written).toMatchObject({ object: 'file', purpose: 'batch_output', bytes: Buffer.byteLength(output), filename: 'batch_out.jsonl' });

      const outputs = await a.files.list({ purpose: 'batch_output' });
      expect(outputs.data).toEqual([written]);
      expect(await (await a.files.content(written.id)).text()).toBe(output);
      expect((await refusal(b.files.retrieve(written.id))).status).toBe(404);
    });

    it('reads an uploaded input file line by line, with line numbers, for its owner only', async () => {
      const uploaded = await upload(a, '{"custom_id":"one"}\n\n{"custom_id":"two"}\r\n');
      const lines: Array<{ line: number; text: string; end: number }> = [];
      for await (const line of service.lines(ownerOf(keyA), uploaded.id)) lines.push(line);
      expect(lines).toEqual([
        { line: 1, text: '{"custom_id":"one"}', end: 20 },
        { line: 3, text: '{"custom_id":"two"}', end: 42 },
      ]);
      // Resumed after the first line: only the rest of the file is read, with the same numbers.
      const rest: Array<{ line: number; text: string; end: number }> = [];
      for await (const line of service.lines(ownerOf(keyA), uploaded.id, { byte: 20, line: 1 })) rest.push(line);
      expect(rest).toEqual([lines[1]]);
      await expect(service.get(ownerOf(keyB), uploaded.id)).rejects.toMatchObject({ status: 404 });
    });

    it('pages exactly through files created in the same millisecond, and past a cursor that was deleted', async () => {
      const owner = `owner-${randomBytes(6).toString('hex')}`;
      const now = Date.now();
      const ids = [now - 1, now, now, now, now, now + 1].map((time) => newFileId(time)).sort();
      const made: FileRecord[] = ids.map((id) => ({ id, owner, filename: 'x.jsonl', bytes: 1, purpose: 'batch', createdAt: Math.floor(now / 1000) }));
      for (const record of made) await records.save(record);

      const walk = async (order: 'asc' | 'desc', limit: number): Promise<string[]> => {
        const seen: string[] = [];
        for (let after: string | undefined; ;) {
          const page = await records.page(owner, { order, limit, after });
          seen.push(...page.records.map((record) => record.id));
          if (!page.hasMore) return seen;
          after = page.records.at(-1)?.id;
        }
      };
      for (const limit of [1, 2, 4, 100]) {
        expect(await walk('asc', limit)).toEqual(ids);
        expect(await walk('desc', limit)).toEqual([...ids].reverse());
      }
      // The cursor's own file deleted between two pages: the next page starts right after where it was.
      await records.remove(made[2]);
      expect((await records.page(owner, { order: 'asc', limit: 2, after: ids[2] })).records.map((record) => record.id)).toEqual(ids.slice(3, 5));
      expect((await records.page(owner, { order: 'desc', limit: 2, after: ids[2] })).records.map((record) => record.id)).toEqual([ids[1], ids[0]]);
      for (const record of made) await records.remove(record);
    });
  });
});

/**
 * The same API with FILES_STORAGE=s3: bodies go to a bucket of an S3-compatible server started
 * in this process (fauxqs; no Docker here), with credentials from the AWS SDK's default chain.
 */
describe('Files API with FILES_STORAGE=s3', () => {
  const stack = e2eStack();
  const key = `sk-files-s3-${randomBytes(8).toString('hex')}`;
  const bucket = `batch-files-${randomBytes(4).toString('hex')}`;
  const credentials = { accessKeyId: 'e2e-access-key', secretAccessKey: 'e2e-secret-key' };
  let server: FauxqsServer;
  let s3: S3Client;
  let api: RunningApi;
  let client: OpenAI;

  beforeAll(async () => {
    const { startFauxqs } = await import('fauxqs');
    server = await startFauxqs({ port: 0, logger: false });
    s3 = new S3Client({ endpoint: server.address, region: 'us-east-1', forcePathStyle: true, credentials });
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    api = await startApi({
      redisUrl: stack.redisUrl,
      apiKeys: [key],
      models: [stack.model],
      env: {
        FILES_STORAGE: 's3',
        FILES_S3_BUCKET: bucket,
        FILES_S3_ENDPOINT: server.address,
        FILES_S3_FORCE_PATH_STYLE: 'true',
        AWS_ACCESS_KEY_ID: credentials.accessKeyId,
        AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
      },
      logFile: resolve(REPO_ROOT, 'test-artifacts/logs/files-s3-api.log'),
    });
    client = new OpenAI({ baseURL: api.baseUrl, apiKey: key, maxRetries: 0 });
  });
  afterAll(async () => {
    await api.process.stop();
    s3.destroy();
    await server.stop();
  });

  const objectKeys = async (): Promise<string[]> => ((await s3.send(new ListObjectsV2Command({ Bucket: bucket }))).Contents ?? []).map(({ Key }) => Key ?? '');

  it('stores the body in the bucket, serves it back, and deletes it there', async () => {
    const body = jsonl(20, 's3');
    const file = await client.files.create({ file: await toFile(Buffer.from(body), 'in.jsonl'), purpose: 'batch' });
    expect(file).toMatchObject({ object: 'file', bytes: Buffer.byteLength(body), purpose: 'batch', filename: 'in.jsonl' });
    expect(await objectKeys()).toEqual([`files/${file.id}`]);
    const stored = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: `files/${file.id}` }));
    expect(await stored.Body?.transformToString()).toBe(body);
    expect(await (await client.files.content(file.id)).text()).toBe(body);

    expect(await client.files.delete(file.id)).toEqual({ id: file.id, object: 'file', deleted: true });
    expect(await objectKeys()).toEqual([]);
  });

  it('leaves nothing in the bucket when an upload is refused half-way', async () => {
    const refused = client.files.create({ file: await toFile(Buffer.from(`${jsonl(3, 'ok')}[1]\n`), 'in.jsonl'), purpose: 'batch' });
    await expect(refused).rejects.toMatchObject({ status: 400 });
    expect(await objectKeys()).toEqual([]);
  });
});
