import { Redis } from 'ioredis';
import { existsSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { Readable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { childPids, isAlive } from '../../tools/local-stack/process-tree';
import { ManagedProcess } from '../../tools/local-stack/managed-process';
import { API_ENTRY, REPO_ROOT } from '../../tools/local-stack/services';
import { longRequest, postChat, readStream } from '../support/chat-requests';
import { STACK_API_KEY, STACK_MODEL, ServiceStack, waitFor } from '../support/service-stack';

/** API_PROCESSES=2: one supervisor, two serving processes on one port. */
describe('API_PROCESSES: several processes serve one port', () => {
  let stack: ServiceStack;
  let redis: Redis;

  beforeAll(async () => {
    // Jobs are read off the shared queue (which process queued one, what waits): every job goes there.
    stack = await ServiceStack.start({ name: 'api-processes', workers: 1, parallelSequences: 2, apiEnv: { API_PROCESSES: '2', AFFINITY: 'false' } });
    redis = new Redis(stack.redis.url);
  });

  afterAll(async () => {
    redis?.disconnect();
    await stack?.stop();
  });

  it('hands connections to every process, each with its own Redis connections, and one scrape counts them all', async () => {
    expect(childPids(supervisorPid(stack))).toHaveLength(2);
    const commandConnections = new Set((await clientNames(redis)).filter((name) => name.startsWith('api-commands:')));
    expect(commandConnections.size).toBe(2);

    const children = childPids(supervisorPid(stack));
    const servedBy = new Set<number>();
    for (let index = 0; index < 6; index++) servedBy.add(await servingPid(stack, `hello ${index}`));
    expect([...servedBy].sort((a, b) => a - b)).toEqual(children);

    // Each process counts only what it served: the total is right only if the scrape sums them.
    const metrics = await scrape(stack);
    expect(sample(metrics, 'llm_api_http_requests_total{method="POST",route="/v1/chat/completions",status="200"}')).toBe(6);

    // Both processes read the same queue from Redis: a queue gauge is not doubled. Two streams
    // hold the worker's two slots; three more requests wait behind them.
    const queue = stack.queue();
    const abort = new AbortController();
    const requests = [0, 1, 2, 3, 4].map(() =>
      postChat(stack.baseUrl, STACK_API_KEY, longRequest(STACK_MODEL, { stream: true }), abort.signal).catch(() => undefined),
    );
    try {
      await waitFor('two running and three waiting', async () => (await queue.getActiveCount()) === 2 && (await queue.getWaitingCount()) === 3);
      expect(sample(await scrape(stack), `llm_api_queue_waiting_jobs{model="${STACK_MODEL}"}`)).toBe(3);
    } finally {
      abort.abort();
      await Promise.all(requests);
    }
    await waitFor('the queue to empty', async () => (await queue.getWaitingCount()) + (await queue.getActiveCount()) === 0);
  });

  it('replaces a process that dies, and the other one serves meanwhile', async () => {
    const [victim, survivor] = childPids(supervisorPid(stack));
    process.kill(victim, 'SIGKILL');
    // Reaped: the supervisor has seen the exit and hands it no more connections.
    await waitFor('the supervisor to reap it', () => Promise.resolve(!existsSync(`/proc/${victim}`)));

    // A scrape while the replacement boots answers from the processes that serve.
    const scraped = await fetch(`${stack.baseUrl.replace(/\/v1$/, '')}/metrics`);
    expect(scraped.status).toBe(200);
    // Requests are answered meanwhile, by the survivor (or by the replacement once it serves).
    for (let index = 0; index < 4; index++) {
      const pid = await servingPid(stack, 'still there?');
      expect(childPids(supervisorPid(stack))).toContain(pid);
    }
    const replacement = await waitFor('a replacement process', () => {
      const pids = childPids(supervisorPid(stack));
      return Promise.resolve(pids.length === 2 && pids.includes(survivor) ? pids.find((pid) => pid !== survivor) : undefined);
    });
    expect(replacement).not.toBe(victim);
    // Once it listens, connections reach it again.
    await waitFor('the replacement to serve', async () => (await servingPid(stack, 'and now?')) === replacement, 30_000);
  });

  it('tries a replacement that cannot start again, with a delay, while the instance stays up', async () => {
    const [victim, survivor] = childPids(supervisorPid(stack));
    await stack.killRedis();
    process.kill(victim, 'SIGKILL');
    // Without Redis a process cannot start: the supervisor says so and tries again later.
    await stack.api.process.waitForOutput(/failed to start \(exit code 1\); trying again in 1000 ms/, 30_000);
    expect(stack.api.process.isRunning).toBe(true);

    await stack.startRedisAgain();
    // Once Redis is back, a later try starts, and it serves beside the survivor.
    await waitFor(
      'a replacement that serves',
      async () => {
        const replacement = childPids(supervisorPid(stack)).find((pid) => pid !== survivor);
        return replacement !== undefined && (await servingPid(stack, 'back?')) === replacement;
      },
      45_000,
    );
    expect(stack.api.process.isRunning).toBe(true);
  }, 90_000);

  it('SIGTERM drains the open streams of every process, then the supervisor exits with nothing left behind', async () => {
    const children = childPids(supervisorPid(stack));
    let stopping: Promise<number | null> | undefined;
    // Two streams on two connections: round-robin puts them on both processes (checked below).
    const readings = [0, 1].map(async () => {
      const response = await streamOnNewConnection(stack.baseUrl, longRequest(STACK_MODEL, { max_tokens: 400, stream: true }));
      return readStream(response, (_event, soFar) => {
        if (!stopping && soFar.content.length > 20) stopping = stack.api.process.stop('SIGTERM', 30_000);
      });
    });

    const servedBy = new Set<number>();
    for (const reading of await Promise.all(readings)) {
      expect(reading.sawDone).toBe(true);
      expect((reading.events.at(-1) as { choices: Array<{ finish_reason: string }> }).choices[0].finish_reason).toBe('length');
      servedBy.add(await pidOfJob(stack, reading.events[0].id as string));
    }
    expect([...servedBy].sort((a, b) => a - b)).toEqual(children);
    expect(await stopping).toBe(0);
    for (const pid of children) expect(isAlive(pid)).toBe(false);
  });

  it('a supervisor that is killed takes its processes with it', async () => {
    const api = await stack.addApi();
    const children = childPids(api.process.pid ?? 0);
    expect(children).toHaveLength(2);
    await api.process.stop('SIGKILL');
    await waitFor('its processes to end', () => Promise.resolve(children.every((pid) => !isAlive(pid))));
  });

  it('a process that cannot start stops the whole service with an error', async () => {
    const taken = createServer();
    await new Promise<void>((done) => taken.listen(0, '127.0.0.1', done));
    let api: ManagedProcess | undefined;
    try {
      const port = (taken.address() as AddressInfo).port;
      api = new ManagedProcess({
        name: 'api',
        command: process.execPath,
        args: [API_ENTRY],
        env: {
          ...process.env,
          REDIS_URL: stack.redis.url,
          API_KEYS: STACK_API_KEY,
          MODELS: STACK_MODEL,
          HOST: '127.0.0.1',
          PORT: String(port),
          API_PROCESSES: '2',
        },
        logFile: resolve(REPO_ROOT, 'test-artifacts/logs/api-processes-port-taken.log'),
      });
      expect(await api.exit).toBe(1);
      expect(api.recentOutput).toMatch(/API process \d+ failed to start/);
    } finally {
      await api?.stop('SIGKILL');
      taken.close();
    }
  });
});

function supervisorPid(stack: ServiceStack): number {
  return stack.api.process.pid ?? 0;
}

/**
 * Which process served a request sent on a connection of its own: its job names the reply
 * channel of the process that took it, and that channel carries the process's pid.
 */
async function servingPid(stack: ServiceStack, content: string): Promise<number> {
  const answer = await postOnNewConnection(stack.baseUrl, { model: STACK_MODEL, messages: [{ role: 'user', content }], max_tokens: 4 });
  expect(answer.status).toBe(200);
  return pidOfJob(stack, (answer.body as { id: string }).id);
}

async function pidOfJob(stack: ServiceStack, completionId: string): Promise<number> {
  const job = await stack.queue().getJob(completionId);
  const channel = (job?.data as { replyTo: { channel: string } }).replyTo.channel;
  return Number(/-(\d+)-[0-9a-f]+\}?$/.exec(channel)?.[1]);
}

function scrape(stack: ServiceStack): Promise<string> {
  return fetch(`${stack.baseUrl.replace(/\/v1$/, '')}/metrics`).then((response) => response.text());
}

async function clientNames(redis: Redis): Promise<string[]> {
  const list = (await redis.call('CLIENT', 'LIST')) as string;
  return list
    .split('\n')
    .map((line) => /\bname=(\S*)/.exec(line)?.[1] ?? '')
    .filter(Boolean);
}

/** The value of one exact sample line of a Prometheus text scrape. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** A chat request on a connection of its own (no keep-alive pool), as separate clients would send it. */
async function postOnNewConnection(baseUrl: string, body: unknown): Promise<{ status: number; body: unknown }> {
  const response = await streamOnNewConnection(baseUrl, body);
  return { status: response.status, body: await response.json() };
}

/** The same, as a fetch Response whose body streams (an SSE answer is read as it comes). */
function streamOnNewConnection(baseUrl: string, body: unknown): Promise<Response> {
  const payload = JSON.stringify(body);
  return new Promise((resolveResponse, reject) => {
    const call = request(
      `${baseUrl}/chat/completions`,
      {
        method: 'POST',
        agent: false,
        headers: { authorization: `Bearer ${STACK_API_KEY}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
      },
      (response) => resolveResponse(new Response(Readable.toWeb(response) as ReadableStream<Uint8Array>, { status: response.statusCode })),
    );
    call.on('error', reject);
    call.end(payload);
  });
}
