import OpenAI from 'openai';
import { RedisEnv } from '@app/config';
import { closeRedis, connectRedis, createRedisConnection, redisTarget } from '@app/redis';
import type { Redis } from 'ioredis';
import { resolve } from 'node:path';
import type { LocalRedisSentinel } from '../../tools/local-stack/redis-sentinel';
import { onNode, startRedisSentinel } from '../../tools/local-stack/redis-sentinel';
import type { RunningApi } from '../../tools/local-stack/services';
import { REPO_ROOT, startApi, startWorker } from '../../tools/local-stack/services';
import { longRequest, postChat, readStream } from '../support/chat-requests';
import { waitFor } from '../support/service-stack';
import { recordFigure } from '../support/figures';
import { assertMatchesSchema } from '../support/openai-schema';

const KEY = 'sk-sentinel-test-0123456789';
const MODEL = 'tiny-chat';
const LOG_DIR = resolve(REPO_ROOT, 'test-artifacts/logs');

// The service behind Redis Sentinel: the primary is killed mid-stream or replaced on purpose,
// Sentinel promotes the replica, and the service serves again through the new primary with no
// process restarted.

/** Sentinel, a worker and an API on it; `name` tells their logs apart. */
async function startOnSentinel(name: string, sentinelCount: number): Promise<{ sentinel: LocalRedisSentinel; api: RunningApi; stop: () => Promise<void> }> {
  const sentinel = await startRedisSentinel(sentinelCount);
  const env = { REDIS_SENTINELS: sentinel.sentinels.join(','), REDIS_SENTINEL_MASTER: sentinel.masterName };
  const worker = await startWorker({
    redisUrl: 'redis://unused:6379',
    modelName: MODEL,
    modelPath: resolve(REPO_ROOT, 'models/tiny-chat.gguf'),
    workerId: `${name}-worker`,
    parallelSequences: 2,
    threads: 1,
    env: { ...env, GPU: 'false', HEALTH_PORT: '0' },
    logFile: resolve(LOG_DIR, `${name}-worker.log`),
  });
  const api = await startApi({ redisUrl: 'redis://unused:6379', apiKeys: [KEY], models: [MODEL], env, logFile: resolve(LOG_DIR, `${name}-api.log`) });
  const stop = async () => {
    await Promise.all([api.process.stop(), worker.stop()]);
    await sentinel.stop();
  };
  return { sentinel, api, stop };
}

/** Sentinel, a worker and an API for the tests of one describe block, started before them and stopped after. */
function sentinelStackPerDescribe(name: string, sentinelCount = 1): { sentinel: LocalRedisSentinel; api: RunningApi } {
  const stack = {} as { sentinel: LocalRedisSentinel; api: RunningApi };
  let stop: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    ({ sentinel: stack.sentinel, api: stack.api, stop } = await startOnSentinel(name, sentinelCount));
  });
  afterAll(async () => {
    await stop?.();
  });
  return stack;
}

/** A node's role: master or slave. */
const roleOf = (address: string) => onNode(address, async (node) => ((await node.call('ROLE')) as string[])[0]);

/** The CLIENT LIST lines of a node or Sentinel, this question's own connection among them. */
const clientLinesOn = (address: string) => onNode(address, async (node) => ((await node.call('CLIENT', 'LIST')) as string).split('\n').filter(Boolean));

/** The clients of a node (CLIENT LIST lines), open for at least `minAgeSeconds`, that are not Sentinel's or replication links. */
const serviceClientsOn = async (address: string, minAgeSeconds = 0) =>
  (await clientLinesOn(address)).filter(
    (line) =>
      !/ cmd=client\|list /.test(line) &&
      !/ name=sentinel-/.test(line) &&
      !/ flags=[^ ]*[SM]/.test(line) &&
      Number(/ age=(\d+)/.exec(line)?.[1]) >= minAgeSeconds,
  );

const serviceConnectionsOn = async (address: string) => (await serviceClientsOn(address)).length;

describe('on Redis Sentinel, through a failover', () => {
  const stack = sentinelStackPerDescribe('sentinel');

  it('ends the in-flight stream with a clear error, then serves again from the promoted replica', async () => {
    const { sentinel, api } = stack;
    const client = new OpenAI({ baseURL: api.baseUrl, apiKey: KEY, maxRetries: 0 });
    const before = await sentinel.currentPrimary();
    await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Hello' }], max_tokens: 5 });

    const response = await postChat(api.baseUrl, KEY, longRequest(MODEL, { stream: true }));
    let killedAt = 0;
    const reading = await readStream(response, (_event, soFar) => {
      if (!killedAt && soFar.content.length > 30) {
        killedAt = Date.now();
        sentinel.primary.child.kill('SIGKILL');
      }
    });
    recordFigure('sentinel primary killed -> in-flight stream ended', Date.now() - killedAt);
    expect(reading.sawDone).toBe(true);
    const last = reading.events.at(-1) as unknown as { error: { message: string } };
    assertMatchesSchema('ErrorResponse', last);
    expect(Date.now() - killedAt).toBeLessThan(5000);

    // Requests during the failover fail fast and clearly; none hangs. Once Sentinel has promoted
    // the replica, the API and the worker (whose queue consumers back off after failed fetches)
    // follow within seconds.
    let servedAgainAt = 0;
    let promotedAt = 0;
    // Watched on its own, so a request under way does not delay noticing the promotion.
    const watchPromotion = setInterval(() => {
      if (promotedAt) return;
      sentinel.currentPrimary().then(
        (primary) => (promotedAt ||= primary === before ? 0 : Date.now()),
        () => undefined,
      );
    }, 100);
    let lastRefusal: unknown;
    try {
      while (Date.now() - killedAt < 30_000) {
        const attemptAt = Date.now();
        const attempt = await postChat(
          api.baseUrl,
          KEY,
          { model: MODEL, messages: [{ role: 'user', content: 'Hello' }], max_tokens: 5 },
          AbortSignal.timeout(10_000),
        );
        expect(Date.now() - attemptAt).toBeLessThan(10_000);
        if (attempt.status === 200) {
          servedAgainAt = Date.now();
          break;
        }
        lastRefusal = await attempt.json();
        // The whole answer, so that a failure says what it was.
        expect({ status: attempt.status, body: lastRefusal }).toEqual({ status: 503, body: lastRefusal });
        assertMatchesSchema('ErrorResponse', lastRefusal);
        await new Promise((resolve_) => setTimeout(resolve_, 200));
      }
    } finally {
      clearInterval(watchPromotion); // even when an answer fails the test: left running, it would keep jest from exiting
    }
    // Served before the watch's next look: the promotion came first all the same.
    if (servedAgainAt && !promotedAt && (await sentinel.currentPrimary()) !== before) promotedAt = servedAgainAt;
    // Says why when it fails: what the service last answered, and whom Sentinel calls the primary
    // (toEqual prints the whole object; toMatchObject printed only the keys that differed).
    const outcome = { servedAgain: servedAgainAt > 0, promoted: promotedAt > 0, lastRefusal, primary: await sentinel.currentPrimary(), before };
    expect(outcome).toEqual({ ...outcome, servedAgain: true, promoted: true });
    recordFigure('sentinel primary killed -> served again', servedAgainAt - killedAt);
    recordFigure('sentinel promoted the replica -> served again', servedAgainAt - promotedAt);
    expect(servedAgainAt - promotedAt).toBeLessThan(8000);
  });
});

describe('on Redis Sentinel, through a planned failover (SENTINEL FAILOVER)', () => {
  // Three Sentinels: the others learn of the switch after the one that led it, and a connection
  // that asks one of them too early is told the old primary, which still answers as a master.
  const stack = sentinelStackPerDescribe('sentinel-planned', 3);

  // Its waits add up to more than jest's default 60 s when something is wrong: the failing one says which.
  it('serves again from the promoted replica while the old primary lives on as its replica', async () => {
    const { sentinel, api } = stack;
    const client = new OpenAI({ baseURL: api.baseUrl, apiKey: KEY, maxRetries: 0 });
    const ask = () => client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Hello' }], max_tokens: 5 });
    await ask();
    const before = await sentinel.currentPrimary();
    expect(await serviceConnectionsOn(before)).toBeGreaterThan(0);
    await sentinel.failover();
    // The demoted primary goes on taking writes for seconds, until Sentinel turns it into a replica
    // (which also drops its clients): the service's connections must leave it before that, or what
    // they write there is lost.
    const leftWhile = await waitFor(
      'the service to leave the old primary, or Sentinel to demote it',
      async () => {
        // Connections first: Sentinel's demotion drops them, and a node once demoted stays so.
        const connections = await serviceConnectionsOn(before);
        const role = await roleOf(before);
        return connections === 0 || role !== 'master' ? { role, connections } : undefined;
      },
      20_000,
    );
    expect(leftWhile).toEqual({ role: 'master', connections: 0 });
    // Nor does one settle there again until Sentinel demotes it: a connection that asked a Sentinel
    // not yet aware of the switch may open to it, and must move on at once (CLIENT LIST's age is
    // in whole seconds: 3 leaves room for a stalled event loop on a loaded machine).
    const settledThere = new Set<string>();
    let demoted = false;
    for (const until = Date.now() + 20_000; !demoted && Date.now() < until;) {
      try {
        const settled = await serviceClientsOn(before, 3);
        demoted = (await roleOf(before)) !== 'master';
        if (!demoted) for (const line of settled) settledThere.add(line);
      } catch {
        // The demotion drops the node's clients, this question's connection among them.
      }
      await new Promise((resolve_) => setTimeout(resolve_, 100));
    }
    expect({ demoted, settledThere: [...settledThere] }).toEqual({ demoted: true, settledThere: [] });
    await waitFor('Sentinel to promote the replica', async () => (await sentinel.currentPrimary()) !== before, 20_000);
    // Every connection to the demoted primary must move: a command connection left there would
    // meet READONLY, a queue consumer would wait on a node no job is added to.
    const served = await waitFor(
      'the service to answer again',
      async () => {
        try {
          return await ask();
        } catch {
          return undefined;
        }
      },
      15_000,
    );
    expect(served.choices[0].message.content?.length).toBeGreaterThan(0);
    // And keeps answering: no connection was left on the demoted primary.
    for (let round = 0; round < 3; round++) expect((await ask()).choices).toHaveLength(1);
  }, 120_000);
});

describe("a process's connections to a Sentinel master", () => {
  let sentinel: LocalRedisSentinel;

  beforeAll(async () => {
    sentinel = await startRedisSentinel(1);
  });

  afterAll(async () => {
    await sentinel.stop();
  });

  const target = () => redisTarget(Object.assign(new RedisEnv(), { REDIS_SENTINELS: [sentinel.sentinels[0]], REDIS_SENTINEL_MASTER: sentinel.masterName }));
  // The question's own connection is counted each time.
  const sentinelClients = async () => (await clientLinesOn(sentinel.sentinels[0])).length;

  it('share one subscription to the Sentinel for switches, which goes with the last of them', async () => {
    const before = await sentinelClients();
    const [quitted, disconnected, closed] = await Promise.all(
      ['quit', 'disconnect', 'close'].map((name) => connectRedis(createRedisConnection(target(), 'blocking', `sentinel-watch-test-${name}`)) as Promise<Redis>),
    );
    // As BullMQ makes its blocking connections.
    const duplicate = closed.duplicate({ connectionName: 'sentinel-watch-test-duplicate' });
    duplicate.on('error', () => undefined);
    await connectRedis(duplicate);
    await waitFor('one subscription for all four', async () => (await sentinelClients()) === before + 1, 5000);
    await quitted.quit();
    disconnected.disconnect();
    await closeRedis(duplicate);
    // Not yet gone: one connection is open (a question's own connection may linger a moment).
    await waitFor('the subscription to stay for the last connection', async () => (await sentinelClients()) === before + 1, 2000);
    await closeRedis(closed);
    await waitFor('the subscription to go with the last connection', async () => (await sentinelClients()) === before, 5000);
    expect([quitted, disconnected, closed, duplicate].map((client) => client.status)).toEqual(['end', 'end', 'end', 'end']);
  });

  it('lets go of a connection closed while it reconnects (no end event comes)', async () => {
    const before = await sentinelClients();
    const client = (await connectRedis(createRedisConnection(target(), 'blocking', 'sentinel-watch-test-reconnecting'))) as Redis;
    await waitFor('the subscription', async () => (await sentinelClients()) === before + 1, 5000);
    const closedWhileReconnecting = new Promise<void>((resolve_) =>
      client.once('reconnecting', () => {
        client.disconnect();
        resolve_();
      }),
    );
    client.disconnect(true);
    await closedWhileReconnecting;
    await waitFor('the subscription to go', async () => (await sentinelClients()) === before, 5000);
  });
});
