import { Redis } from 'ioredis';
import { apiRepliesChannel } from '@app/contracts';
import { closeRedis, connectRedis, createRedisConnection } from '@app/redis';
import type { RedisClient } from '@app/redis';
import { CompletionEventBus } from '../../apps/api/src/pipeline/completion-event-bus';
import type { LocalRedis } from '../../tools/local-stack/redis-server';
import { startRedisServer } from '../../tools/local-stack/redis-server';
import { waitFor } from '../support/service-stack';

/**
 * The API's one subscriber connection, dropped and reconnected (as in a Sentinel failover): ioredis
 * says 'ready' before Redis has confirmed the reply channel again. A request taken then would name
 * a channel nobody hears yet, and its worker, publishing into nothing, would stop the job (the
 * failover test saw that as a 500 "The completion was cancelled.").
 */
describe("the API's event subscriber after a reconnect", () => {
  let redis: LocalRedis;
  let subscriber: RedisClient;
  let commands: Redis;

  beforeAll(async () => {
    redis = await startRedisServer();
    subscriber = await connectRedis(createRedisConnection({ kind: 'standalone', url: redis.url }, 'subscriber', 'event-bus-test'));
    commands = new Redis(redis.url);
  });

  afterAll(async () => {
    await closeRedis(subscriber);
    commands.disconnect();
    await redis.stop();
  });

  it('takes no completion until Redis has confirmed its reply channel again', async () => {
    const bus = new CompletionEventBus(subscriber, 'instance-a');
    await bus.onApplicationBootstrap();
    expect(bus.isConnected).toBe(true);
    const listener = { onEvent: () => undefined, onMalformed: () => undefined, onConnectionLost: jest.fn() };
    bus.listen('chatcmpl-before', listener);

    // What the bus says the moment ioredis is ready again (its listener runs before this one).
    const atReady = new Promise<{ connected: boolean; listens: boolean }>((resolve) =>
      subscriber.once('ready', () => {
        const connected = bus.isConnected;
        let listens = true;
        try {
          bus.listen('chatcmpl-at-ready', listener);
        } catch {
          listens = false;
        }
        resolve({ connected, listens });
      }),
    );
    await commands.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
    await expect(atReady).resolves.toEqual({ connected: false, listens: false });
    expect(listener.onConnectionLost).toHaveBeenCalledTimes(1);

    await waitFor('the bus to follow completions again', () => Promise.resolve(bus.isConnected), 5000);
    // Once it says so, a worker's events are heard.
    expect(await commands.spublish(apiRepliesChannel('instance-a'), '{}')).toBe(1);
  });
});
