import { McpSessionPool } from './mcp-session-pool';
import type { Closable } from './mcp-session-pool';

class FakeSession implements Closable {
  closed: boolean | undefined;
  constructor(readonly name: string) {}
  close(goodbye: boolean): Promise<void> {
    this.closed = goodbye;
    return Promise.resolve();
  }
}

describe('McpSessionPool', () => {
  afterEach(() => jest.useRealTimers());

  it('gives back the idle session of the same key, opens another for another key or while it is in use', () => {
    const pool = new McpSessionPool<FakeSession>(1000, 8);
    const a = pool.acquire('a', () => new FakeSession('a1'));
    expect(pool.acquire('a', () => new FakeSession('a2')).name).toBe('a2');
    pool.release('a', a);
    expect(pool.acquire('a', () => new FakeSession('a3'))).toBe(a);
    expect(pool.acquire('b', () => new FakeSession('b1')).name).toBe('b1');
    expect(pool.size).toBe(3);
  });

  it('closes an idle session after the idle time, saying goodbye', () => {
    jest.useFakeTimers();
    const pool = new McpSessionPool<FakeSession>(1000, 8);
    const a = pool.acquire('a', () => new FakeSession('a1'));
    pool.release('a', a);
    jest.advanceTimersByTime(999);
    expect(a.closed).toBeUndefined();
    jest.advanceTimersByTime(1);
    expect(a.closed).toBe(true);
    expect(pool.size).toBe(0);
  });

  it('keeps at most maxSessions, closing the least recently used idle one first', () => {
    const pool = new McpSessionPool<FakeSession>(1000, 2);
    const a = pool.acquire('a', () => new FakeSession('a'));
    const b = pool.acquire('b', () => new FakeSession('b'));
    pool.release('a', a);
    pool.release('b', b);
    pool.release(
      'b',
      pool.acquire('b', () => new FakeSession('unused')),
    );
    pool.acquire('c', () => new FakeSession('c'));
    expect(a.closed).toBe(true);
    expect(b.closed).toBeUndefined();
    expect(pool.size).toBe(2);
  });

  it('drops a discarded session without goodbye, and closes all at shutdown, one in use as it comes back', async () => {
    const pool = new McpSessionPool<FakeSession>(1000, 8);
    const a = pool.acquire('a', () => new FakeSession('a'));
    const b = pool.acquire('b', () => new FakeSession('b'));
    const c = pool.acquire('c', () => new FakeSession('c'));
    pool.discard(a, false);
    pool.release('b', b);
    await pool.close();
    expect([a.closed, b.closed, c.closed]).toEqual([false, true, undefined]);
    pool.release('c', c);
    expect(c.closed).toBe(true);
    expect(pool.size).toBe(0);
  });
});
