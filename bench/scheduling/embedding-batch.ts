/**
 * `npm run bench:embedding-batch -- [--lines=10000] [--inputs=4]`
 *
 * A corpus embedded through the Batch API, as a platform team would: `lines` `/v1/embeddings`
 * lines of `inputs` texts each, on a private Redis, API and llama.cpp worker serving the
 * generated embedding model (tiny-embed, 1 thread, no GPU). Timed by polling every 100 ms from
 * the batch's creation to `completed`; then the output file is checked: every custom_id answered
 * exactly once, every status 200, every line's vectors as many as its inputs, of unit length. A
 * sample of lines is embedded again directly and must give the same vectors (1e-5).
 * Results go to bench/results/embedding-batch.json; process logs to test-artifacts/embedding-batch/.
 */
import OpenAI, { toFile } from 'openai';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startRedisServer } from '../../tools/local-stack/redis-server';
import { REPO_ROOT, startApi, startWorker } from '../../tools/local-stack/services';
import { describeMachine } from '../common/machine';
import { numberOption } from '../common/command-line';
import { round } from '../common/stats';

const LINES = numberOption('lines', 10_000);
const INPUTS = numberOption('inputs', 4);
const MODEL = 'tiny-embed';
const KEY = 'sk-bench-embedding-batch-0123456789';
const POLL_MS = 100;
const SAMPLE = 20;
const LOG_DIR = resolve(REPO_ROOT, 'test-artifacts/embedding-batch');
const WORDS = ['rabbit', 'watch', 'hole', 'queen', 'hearts', 'tarts', 'hatter', 'tea', 'dormouse', 'cat', 'grin', 'garden'];

const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

/** Line `index`'s texts: short sentences, all different. */
const textsOf = (index: number): string[] =>
  Array.from(
    { length: INPUTS },
    (_, input) => `${WORDS[(index + input) % WORDS.length]} ${WORDS[(index * 7 + input) % WORDS.length]} number ${index}.${input}`,
  );

interface OutputLine {
  custom_id: string;
  response: { status_code: number; body: { data: Array<{ index: number; embedding: number[] }> } } | null;
  error: unknown;
}

const norm = (vector: number[]): number => Math.sqrt(vector.reduce((sum, value) => sum + value * value, 0));

async function main(): Promise<void> {
  await mkdir(LOG_DIR, { recursive: true });
  const filesDir = await mkdtemp(join(tmpdir(), 'embedding-batch-'));
  const redis = await startRedisServer({ logFile: join(LOG_DIR, 'redis.log') });
  const stops: Array<() => Promise<unknown>> = [() => redis.stop(), () => rm(filesDir, { recursive: true, force: true })];
  try {
    const api = await startApi({ redisUrl: redis.url, apiKeys: [KEY], models: [MODEL], env: { FILES_DIR: filesDir }, logFile: join(LOG_DIR, 'api.log') });
    stops.push(() => api.process.stop('SIGTERM'));
    const worker = await startWorker({
      redisUrl: redis.url,
      modelName: MODEL,
      modelPath: resolve(REPO_ROOT, `models/${MODEL}.gguf`),
      parallelSequences: 4,
      threads: 1,
      env: { GPU: 'false', HEALTH_PORT: '0' },
      logFile: join(LOG_DIR, 'worker.log'),
    });
    stops.push(() => worker.stop('SIGTERM'));
    const client = new OpenAI({ baseURL: api.baseUrl, apiKey: KEY, maxRetries: 0 });

    const input = Array.from({ length: LINES }, (_, index) =>
      JSON.stringify({
        custom_id: `line-${index}`,
        method: 'POST',
        url: '/v1/embeddings',
        body: { model: MODEL, input: textsOf(index), encoding_format: 'float' },
      }),
    ).join('\n');
    const file = await client.files.create({ file: await toFile(Buffer.from(input), 'corpus.jsonl'), purpose: 'batch' });
    const startedAt = performance.now();
    let batch = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/embeddings', completion_window: '24h' });
    while (batch.status !== 'completed' && batch.status !== 'failed' && batch.status !== 'expired' && batch.status !== 'cancelled') {
      await sleep(POLL_MS);
      batch = await client.batches.retrieve(batch.id);
    }
    const seconds = (performance.now() - startedAt) / 1000;
    if (batch.status !== 'completed' || !batch.output_file_id) throw new Error(`the batch ended ${batch.status}: ${JSON.stringify(batch.errors)}`);

    const lines = (await (await client.files.content(batch.output_file_id)).text())
      .trimEnd()
      .split('\n')
      .map((json) => JSON.parse(json) as OutputLine);
    const answered = new Map<string, number>();
    for (const line of lines) answered.set(line.custom_id, (answered.get(line.custom_id) ?? 0) + 1);
    const twice = [...answered.values()].filter((count) => count > 1).length;
    const missing = LINES - answered.size;
    const bad = lines.filter(
      (line) =>
        line.response?.status_code !== 200 ||
        line.response.body.data.length !== INPUTS ||
        line.response.body.data.some(({ embedding }) => Math.abs(norm(embedding) - 1) > 1e-5),
    ).length;
    // A sample embedded again directly: the same vectors as in the output file.
    let worstDifference = 0;
    for (let sample = 0; sample < SAMPLE; sample++) {
      const index = Math.floor((sample * LINES) / SAMPLE);
      const direct = await client.embeddings.create({ model: MODEL, input: textsOf(index), encoding_format: 'float' });
      const line = lines.find((candidate) => candidate.custom_id === `line-${index}`);
      for (const [input, { embedding }] of direct.data.entries()) {
        const stored = line?.response?.body.data[input].embedding ?? [];
        worstDifference = Math.max(worstDifference, ...embedding.map((value, position) => Math.abs(value - (stored[position] ?? Infinity))));
      }
    }
    const result = {
      generatedAt: new Date().toISOString(),
      machine: describeMachine(),
      settings: { lines: LINES, inputsPerLine: INPUTS, model: MODEL, parallelSequences: 4, threads: 1, embeddingContexts: 1 },
      seconds: round(seconds, 1),
      linesPerSecond: round(LINES / seconds, 1),
      embeddingsPerSecond: round((LINES * INPUTS) / seconds, 1),
      requestCounts: batch.request_counts,
      usage: batch.usage,
      outputLines: lines.length,
      answeredTwice: twice,
      missing,
      notOkOrWrongShape: bad,
      sampleMaxDifferenceFromDirect: worstDifference,
    };
    console.log(JSON.stringify(result, null, 2));
    await writeFile(resolve(REPO_ROOT, 'bench/results/embedding-batch.json'), `${JSON.stringify(result, null, 2)}\n`);
    if (twice > 0 || missing > 0 || bad > 0 || worstDifference > 1e-5) process.exitCode = 1;
  } finally {
    for (const stop of stops.reverse()) await stop();
  }
}

void main();
