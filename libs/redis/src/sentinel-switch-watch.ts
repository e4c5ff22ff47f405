import { isIP } from 'node:net';
import { Redis } from 'ioredis';
import type { HostPort } from './redis-target';

const SWITCH_CHANNEL = '+switch-master';

/**
 * How long after a switch a connection found on another node than the announced primary is moved
 * again. Bounded, so that a switch the watch did not hear of cannot keep connections moving.
 */
const MOVE_AGAIN_FOR_MS = 30_000;

/**
 * The new primary (host:port) a `+switch-master` message ("<master> <old ip> <old port> <new ip>
 * <new port>") announces for `masterName`; undefined for another master's switch.
 */
export function switchedPrimary(masterName: string, message: string): string | undefined {
  const [master, , , host, port] = message.split(' ');
  return master === masterName && host && port ? `${host}:${port}` : undefined;
}

/** host:port of the node a connection's socket is open to, IPv4 as Sentinel writes it. */
function endpointOf(client: Redis): string | undefined {
  const { remoteAddress, remotePort } = client.stream ?? {};
  return remoteAddress && remotePort ? `${remoteAddress.replace(/^::ffff:/, '')}:${remotePort}` : undefined;
}

/**
 * Moves a process's connections off a primary that Sentinel has replaced as soon as Sentinel
 * announces it (+switch-master), not seconds later when Sentinel demotes the old primary and
 * drops its clients: what they wrote there meanwhile would be lost. A connection moves by
 * reconnecting (`disconnect(true)`), which asks Sentinel for the primary again and resends what
 * it had in flight. The Sentinel it asks may not know of the switch yet (the others learn of it
 * from the one that led it, within seconds) and name the old primary, which still answers as a
 * master: a connection that opens to another node than the announced one moves again.
 *
 * Not ioredis's own `failoverDetector`: that subscribes once per connection, reacts to any
 * master's switch, and in ioredis 6 ends for good a connection it interrupts while reconnecting
 * (its connector's connect fails with "Connection is closed."), which left an API and a worker
 * unable to reach the promoted primary. Here one subscription per configured Sentinel serves the
 * process, open while any connection to the master is, and only a connection that is ready is
 * moved.
 */
export class SentinelSwitchWatch {
  private readonly clients = new Set<Redis>();
  private subscribers: Redis[] = [];
  private switches = 0;
  private announced: { primary: string; at: number } | undefined;

  constructor(
    private readonly sentinels: readonly HostPort[],
    private readonly masterName: string,
    private readonly retryStrategy: (times: number) => number,
  ) {}

  /** Follows `client` from each connect until it ends or is closed (see `unfollow`). */
  follow(client: Redis): void {
    let switchesAtConnect = 0;
    client.on('connecting', () => {
      switchesAtConnect = this.switches;
      this.add(client);
    });
    // A connection that was connecting at the switch may have been told the old primary; where
    // the announced primary cannot be compared (a hostname), it moves once to make sure. Checked
    // as the socket opens, before the handshake's round trip, so nothing it queued is sent there.
    client.on('connect', () => {
      if (this.offPrimary(client) ?? this.switches !== switchesAtConnect) client.disconnect(true);
    });
    client.on('end', () => this.unfollow(client));
  }

  /** A connection closed while it was reconnecting ends without an 'end' event: its closer says so. */
  unfollow(client: Redis): void {
    this.clients.delete(client);
    if (this.clients.size > 0) return;
    for (const subscriber of this.subscribers) subscriber.disconnect();
    this.subscribers = [];
  }

  private add(client: Redis): void {
    this.clients.add(client);
    if (this.subscribers.length === 0) this.subscribers = this.sentinels.map((sentinel) => this.subscribe(sentinel));
  }

  private subscribe(sentinel: HostPort): Redis {
    const subscriber = new Redis({ ...sentinel, retryStrategy: this.retryStrategy, maxRetriesPerRequest: null, connectionName: `switch-watch:${this.masterName}` });
    // A Sentinel that is away is retried; the others (and a reconnect's resolution) cover for it.
    subscriber.on('error', () => undefined);
    subscriber.on('message', (channel: string, message: string) => {
      const primary = channel === SWITCH_CHANNEL ? switchedPrimary(this.masterName, message) : undefined;
      if (primary) this.onSwitch(primary);
    });
    subscriber.subscribe(SWITCH_CHANNEL).catch(() => undefined);
    return subscriber;
  }

  /** Every Sentinel announces the switch: the first announcement moves every connection, the others those found elsewhere. */
  private onSwitch(primary: string): void {
    const isNew = primary !== this.announced?.primary;
    if (isNew) {
      this.switches++;
      this.announced = { primary, at: Date.now() };
    }
    for (const client of this.clients) {
      if (client.status === 'ready' && (isNew ? this.offPrimary(client) !== false : this.offPrimary(client) === true)) client.disconnect(true);
    }
  }

  /**
   * Whether a connection is open to another node than the primary announced lately; undefined
   * when that cannot be told: no recent switch, a hostname announced, no socket.
   */
  private offPrimary(client: Redis): boolean | undefined {
    const { announced } = this;
    if (!announced || Date.now() - announced.at > MOVE_AGAIN_FOR_MS || !isIP(announced.primary.slice(0, announced.primary.lastIndexOf(':')))) return undefined;
    const endpoint = endpointOf(client);
    return endpoint === undefined ? undefined : endpoint !== announced.primary;
  }
}
