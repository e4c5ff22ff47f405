import { ApiEnv, loadEnv } from '@app/config';
import { closeRedis, connectRedis, createRedisConnection } from '@app/redis';
import type { RedisClient } from '@app/redis';
import { ConversationLocks, ConversationStore, conversationKeys } from '@app/api';
import type { ConversationRecord } from '@app/api';
import { randomBytes } from 'node:crypto';
import { waitFor } from './support/service-stack';
import { e2eStack } from './support/stack-env';

type Item = Parameters<ConversationStore['append']>[1][number];

const message = (id: string, text = id): Item => ({ type: 'message', id, role: 'user', content: [{ type: 'input_text', text }], status: 'completed' });

/** ConversationStore and ConversationLocks on the suite's real Redis: what their scripts promise. */
describe('conversation store and locks (Redis)', () => {
  const stack = e2eStack();
  const env = loadEnv(ApiEnv, { API_KEYS: 'sk-conversation-store-test', STORE_TTL_SECONDS: '60', STORE_MAX_PER_KEY: '2', RESUME_GRACE_MS: '1000' });
  let redis: RedisClient;
  let store: ConversationStore;
  let locks: ConversationLocks;

  beforeAll(async () => {
    redis = await connectRedis(createRedisConnection({ kind: 'standalone', url: stack.redisUrl }, 'commands', 'conversation-store-e2e'));
    store = new ConversationStore(env, redis);
    locks = new ConversationLocks(env, redis);
  });
  afterAll(() => closeRedis(redis));

  const owner = (): string => `owner-${randomBytes(4).toString('hex')}`;
  // Each a millisecond after the last: records made in one millisecond tie in the owner's index.
  let clock = Date.now();
  const conversation = async (who = owner()): Promise<ConversationRecord> => {
    const record = { owner: who, id: `conv_test${randomBytes(8).toString('hex')}`, createdAtMs: ++clock, metadata: {} };
    await store.create(record);
    return record;
  };
  const ids = async (id: string): Promise<string[]> => (await store.allItems(id)).map((item) => item.id);

  it('appends in order, and every key expires with the record', async () => {
    const record = await conversation();
    expect(await store.append(record.id, [message('a'), message('b')], 'client', 5)).toBeUndefined();
    expect(await store.append(record.id, [message('c')], 'client', 5)).toBeUndefined();
    expect(await ids(record.id)).toEqual(['a', 'b', 'c']);
    const keys = conversationKeys(record.id);
    const recordTtl = await redis.pttl(keys.record);
    expect(recordTtl).toBeGreaterThan(55_000);
    for (const key of [keys.items, keys.order, keys.next]) {
      const ttl = await redis.pttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(recordTtl);
    }
    expect(await store.find(owner(), record.id)).toBeUndefined();
    expect(await store.find(record.owner, record.id)).toEqual(record);
  });

  it('writes all or none for a client: a duplicate id or a full conversation refuses the whole call; a turn skips ids already there', async () => {
    const record = await conversation();
    await store.append(record.id, [message('a')], 'client', 3);
    expect(await store.append(record.id, [message('b'), message('a')], 'client', 3)).toEqual({ refused: 'duplicate', itemId: 'a' });
    expect(await store.append(record.id, [message('b'), message('c'), message('d')], 'client', 3)).toEqual({ refused: 'full', count: 1 });
    expect(await ids(record.id)).toEqual(['a']);
    expect(await store.append(record.id, [message('a', 'again'), message('b'), message('c'), message('d')], 'turn', 0)).toBeUndefined();
    expect(await ids(record.id)).toEqual(['a', 'b', 'c', 'd']);
    expect(await store.item(record.id, 'a')).toEqual(message('a'));
  });

  it('pages both ways after a cursor; a removed item leaves the others in place', async () => {
    const record = await conversation();
    await store.append(
      record.id,
      ['a', 'b', 'c', 'd', 'e'].map((id) => message(id)),
      'client',
      10,
    );
    const names = (page: { items: Item[] } | undefined): string[] => page!.items.map((item) => item.id);
    expect(names(await store.page(record.id, 'asc', 2))).toEqual(['a', 'b']);
    expect((await store.page(record.id, 'asc', 2))!.hasMore).toBe(true);
    expect(names(await store.page(record.id, 'asc', 2, 'b'))).toEqual(['c', 'd']);
    expect(names(await store.page(record.id, 'desc', 2, 'c'))).toEqual(['b', 'a']);
    expect((await store.page(record.id, 'desc', 2, 'c'))!.hasMore).toBe(false);
    expect(await store.removeItem(record.id, 'c')).toBe(true);
    expect(await store.removeItem(record.id, 'c')).toBe(false);
    expect(names(await store.page(record.id, 'asc', 10, 'b'))).toEqual(['d', 'e']);
    expect(await store.page(record.id, 'asc', 10, 'c')).toBeUndefined();
    await store.append(record.id, [message('f')], 'client', 10);
    expect(await ids(record.id)).toEqual(['a', 'b', 'd', 'e', 'f']);
  });

  it('keeps STORE_MAX_PER_KEY conversations per owner, dropping the oldest with its items', async () => {
    const who = owner();
    const oldest = await conversation(who);
    await store.append(oldest.id, [message('a')], 'client', 10);
    await conversation(who);
    await conversation(who);
    expect(await store.find(who, oldest.id)).toBeUndefined();
    expect(await redis.exists(conversationKeys(oldest.id).items)).toBe(0);
  });

  it('locks a conversation for one holder; its turn gives the lock back in the same step', async () => {
    const record = await conversation();
    const release = await locks.take(record.id, 'resp_one');
    await expect(locks.take(record.id, 'resp_two')).rejects.toMatchObject({ status: 400, code: 'conversation_locked', param: 'conversation' });
    // Another holder's turn does not free it; the holder's own does.
    await store.append(record.id, [message('x')], 'turn', 0, 'resp_two');
    expect(await redis.get(conversationKeys(record.id).lock)).toBe('resp_one');
    await store.append(record.id, [message('y')], 'turn', 0, 'resp_one');
    expect(await redis.exists(conversationKeys(record.id).lock)).toBe(0);
    release();
    (await locks.take(record.id, 'resp_two'))();
  });

  it('refuses a turn on a conversation deleted meanwhile, and still gives its lock back', async () => {
    const record = await conversation();
    await locks.take(record.id, 'resp_late');
    await store.delete(record);
    expect(await store.append(record.id, [message('z')], 'turn', 0, 'resp_late')).toEqual({ refused: 'gone' });
    expect(await redis.exists(conversationKeys(record.id).lock, conversationKeys(record.id).items)).toBe(0);
  });

  it('lets the lock of an instance that died lapse after its lease (RESUME_GRACE_MS)', async () => {
    const record = await conversation();
    const dying = await connectRedis(createRedisConnection({ kind: 'standalone', url: stack.redisUrl }, 'commands', 'conversation-store-dying'));
    await new ConversationLocks(env, dying).take(record.id, 'resp_gone');
    await closeRedis(dying); // its renewals fail from now on, as a dead instance's stop
    await expect(locks.take(record.id, 'resp_next')).rejects.toMatchObject({ code: 'conversation_locked' });
    const started = Date.now();
    const release = await waitFor('the lapsed lock to be taken', () => locks.take(record.id, 'resp_next').catch(() => undefined), 5_000);
    expect(Date.now() - started).toBeLessThan(1_500);
    release();
  });
});
