/** How long a session may wait unused before it is closed (servers drop idle sessions too). */
export const SESSION_IDLE_MS = 30_000;
/** Sessions open at most, idle and in use together; the least recently used idle one goes first. */
export const MAX_SESSIONS = 64;

/** What the pool needs of a session (McpSession). */
export interface Closable {
  /** Never throws; with `goodbye`, tells the server first. */
  close(goodbye: boolean): Promise<void>;
}

interface Idle {
  key: string;
  timer: NodeJS.Timeout;
}

/**
 * Open MCP sessions kept between exchanges, per server (key: mcpServerKey), so that a call after
 * the first skips the handshake. A session serves one exchange at a time: one taken is out of the
 * pool until given back (`release`) or dropped (`discard`); a second exchange meanwhile opens
 * another. Idle sessions close after `idleMs`; at most `maxSessions` are open.
 */
export class McpSessionPool<S extends Closable> {
  /** Least recently used first. */
  private readonly idle = new Map<S, Idle>();
  private readonly inUse = new Set<S>();
  /** Sessions still closing (their DELETE, their sockets): awaited by `close`. */
  private readonly closing = new Set<Promise<void>>();
  private closed = false;

  constructor(
    private readonly idleMs = SESSION_IDLE_MS,
    private readonly maxSessions = MAX_SESSIONS,
  ) {}

  /** Sessions open: idle and in use. */
  get size(): number {
    return this.idle.size + this.inUse.size;
  }

  /** The idle session for `key` used last, or a new one from `open`, room made by closing the least recently used idle session. */
  acquire(key: string, open: () => S): S {
    let found: S | undefined;
    for (const [session, idle] of this.idle) if (idle.key === key) found = session;
    if (found) {
      this.unidle(found);
    } else {
      for (const oldest of this.idle.keys()) {
        if (this.size < this.maxSessions) break;
        this.discard(oldest, true);
      }
      found = open();
    }
    this.inUse.add(found);
    return found;
  }

  /** Back to the pool after an exchange that left it sound (closed instead if there is no room or the pool is closed). */
  release(key: string, session: S): void {
    this.inUse.delete(session);
    if (this.closed || this.size >= this.maxSessions) {
      this.discard(session, true);
      return;
    }
    const timer = setTimeout(() => this.discard(session, true), this.idleMs);
    timer.unref();
    this.idle.set(session, { key, timer });
  }

  /** Out of the pool for good, closed in the background. */
  discard(session: S, goodbye: boolean): void {
    this.inUse.delete(session);
    this.unidle(session);
    const closed = session.close(goodbye);
    this.closing.add(closed);
    void closed.finally(() => this.closing.delete(closed));
  }

  /** Closes every idle session (and each one in use as it comes back), then waits for all to be closed. */
  async close(): Promise<void> {
    this.closed = true;
    for (const session of [...this.idle.keys()]) this.discard(session, true);
    while (this.closing.size > 0) await Promise.all(this.closing);
  }

  private unidle(session: S): void {
    const idle = this.idle.get(session);
    if (!idle) return;
    clearTimeout(idle.timer);
    this.idle.delete(session);
  }
}
