import { ApiEnv, loadEnv } from '@app/config';
import { closeRedis, connectRedis, createRedisConnection } from '@app/redis';
import type { RedisClient } from '@app/redis';
import { LoopStepLogs, LoopTakenOver } from '@app/api';
import { randomBytes } from 'node:crypto';
import { e2eStack } from './support/stack-env';

/** A background tool loop's step log on the suite's real Redis: its one writer, and the stale one refused. */
describe('tool loop step log (Redis)', () => {
  const stack = e2eStack();
  const env = loadEnv(ApiEnv, { API_KEYS: 'sk-loop-steps-test', RESUME_WINDOW_SECONDS: '60' });
  let redis: RedisClient;
  let logs: LoopStepLogs;

  beforeAll(async () => {
    redis = await connectRedis(createRedisConnection({ kind: 'standalone', url: stack.redisUrl }, 'commands', 'loop-steps-e2e'));
    logs = new LoopStepLogs(env, redis);
  });
  afterAll(() => closeRedis(redis));

  const responseId = (): string => `resp_test${randomBytes(8).toString('hex')}`;

  it('appends in order for the writer at the tail, and expires with the resume window', async () => {
    const id = responseId();
    const writer = logs.writer(id, '0');
    await writer.append({ s: 'turn', job: `${id}_0` });
    await writer.append({ s: 'calling', id: 'mcp_1' });
    const read = await logs.read(id, '0');
    expect(read.map(({ step }) => step)).toEqual([
      { s: 'turn', job: `${id}_0` },
      { s: 'calling', id: 'mcp_1' },
    ]);
    expect(await logs.read(id, read[0].entryId)).toEqual([read[1]]);
    const ttl = await redis.pttl(`{response:${id}}:loop-steps`);
    expect(ttl).toBeGreaterThan(50_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });

  it('refuses a writer whose tail is no longer the last step: an instance taken for dead makes no call twice', async () => {
    const id = responseId();
    const first = logs.writer(id, '0');
    await first.append({ s: 'turn', job: `${id}_0` });
    const [{ entryId }] = await logs.read(id, '0');
    // Another instance takes the loop on from the same tail and goes first.
    const second = logs.writer(id, entryId);
    await second.append({ s: 'calling', id: 'mcp_1' });
    await expect(first.append({ s: 'calling', id: 'mcp_1' })).rejects.toBeInstanceOf(LoopTakenOver);
    // A writer that starts on an empty log is refused once someone wrote.
    await expect(logs.writer(id, '0').append({ s: 'abandon' })).rejects.toBeInstanceOf(LoopTakenOver);
    expect((await logs.read(id, '0')).map(({ step }) => step.s)).toEqual(['turn', 'calling']);
    await second.append({ s: 'called', id: 'mcp_1', result: { output: 'ok' } });
    expect((await logs.read(id, '0')).map(({ step }) => step.s)).toEqual(['turn', 'calling', 'called']);
  });
});
