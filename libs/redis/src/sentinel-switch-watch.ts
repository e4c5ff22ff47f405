import { isIP } from 'node:net';
import { Redis } from 'ioredis';
import type { HostPort } from './redis-target';

const SWITCH_CHANNEL = '+switch-master';

/** How long after a switch a connection found on the replaced primary is moved again. */
const MOVE_AGAIN_FOR_MS = 30_000;

/** A switch Sentinel announced: the primary it replaced and the new one, as host:port. */
export interface Switch {
  previous: string;
  primary: string;
}

/**
 * The switch a `+switch-master` message ("<master> <old ip> <old port> <new ip> <new port>")
 * announces for `masterName`; undefined for another master's switch.
 */
export function switchOf(masterName: string, message: string): Switch | undefined {
  const [master, oldHost, oldPort, host, port] = message.split(' ');
  return master === masterName && oldHost && oldPort && host && port ? { previous: `${oldHost}:${oldPort}`, primary: `${host}:${port}` } : undefined;
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
 * master: a connection that opens to the replaced primary moves again. Only a socket open to the
 * very address Sentinel announced as replaced counts, so that an address written another way
 * (a hostname, a NAT) cannot keep connections moving; such a connection moves once.
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
  /** The latest switch; `comparable` when its replaced primary is an IP address, as a socket's is. */
  private announced: (Switch & { at: number; comparable: boolean }) | undefined;

  constructor(
    private readonly sentinels: readonly HostPort[],
    private readonly masterName: string,
    private readonly retryStrategy: (times: number) => number,
  ) {}

  /** Follows `client` from each connect until it ends or is closed (see `unfollow`). */
  follow(client: Redis): void {
    let announcedAtConnect = this.announced;
    client.on('connecting', () => {
      announcedAtConnect = this.announced;
      this.add(client);
    });
    // A connection that was connecting at the switch may have been told the old primary; where
    // its address cannot be compared (a hostname), it moves once to make sure. Checked as the
    // socket opens, before the handshake's round trip, so none of its own commands go there.
    client.on('connect', () => {
      if (this.onReplacedPrimary(client) ?? this.announced !== announcedAtConnect) client.disconnect(true);
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
    const subscriber = new Redis({
      ...sentinel,
      retryStrategy: this.retryStrategy,
      maxRetriesPerRequest: null,
      connectionName: `switch-watch:${this.masterName}`,
    });
    // A Sentinel that is away is retried; the others (and a reconnect's resolution) cover for it.
    subscriber.on('error', () => undefined);
    subscriber.on('message', (channel: string, message: string) => {
      const announced = channel === SWITCH_CHANNEL ? switchOf(this.masterName, message) : undefined;
      if (announced) this.onSwitch(announced);
    });
    subscriber.subscribe(SWITCH_CHANNEL).catch(() => undefined);
    return subscriber;
  }

  /**
   * Every Sentinel announces the switch: the first announcement moves every connection not on the
   * new primary, the others those still on the replaced one. A connection whose socket has just
   * opened (status 'connect') moves too: its check on opening came before the announcement.
   */
  private onSwitch(announced: Switch): void {
    const isNew = announced.previous !== this.announced?.previous || announced.primary !== this.announced.primary;
    if (isNew) {
      const replacedHost = announced.previous.slice(0, announced.previous.lastIndexOf(':'));
      this.announced = { ...announced, at: Date.now(), comparable: isIP(replacedHost) !== 0 };
    }
    for (const client of this.clients) {
      if (client.status !== 'ready' && client.status !== 'connect') continue;
      if (isNew ? endpointOf(client) !== announced.primary : this.onReplacedPrimary(client)) client.disconnect(true);
    }
  }

  /**
   * Whether a connection is open to the primary a recent switch replaced; undefined when that
   * cannot be told: no recent switch, an address that is not an IP, no socket.
   */
  private onReplacedPrimary(client: Redis): boolean | undefined {
    const { announced } = this;
    if (!announced?.comparable || Date.now() - announced.at > MOVE_AGAIN_FOR_MS) return undefined;
    const endpoint = endpointOf(client);
    return endpoint === undefined ? undefined : endpoint === announced.previous;
  }
}
