import { Redis } from 'ioredis';
import type { HostPort } from './redis-target';

const SWITCH_CHANNEL = '+switch-master';

/**
 * The new primary (host:port) a `+switch-master` message ("<master> <old ip> <old port> <new ip>
 * <new port>") announces for `masterName`; undefined for another master's switch.
 */
export function switchedPrimary(masterName: string, message: string): string | undefined {
  const [master, , , host, port] = message.split(' ');
  return master === masterName && host && port ? `${host}:${port}` : undefined;
}

/**
 * Moves a process's connections off a primary that Sentinel has replaced as soon as Sentinel
 * announces it (+switch-master), not seconds later when Sentinel demotes the old primary and
 * drops its clients: what they wrote there meanwhile would be lost. A connection moves by
 * reconnecting (`disconnect(true)`), which asks Sentinel for the primary again and resends what
 * it had in flight.
 *
 * Not ioredis's own `failoverDetector`: that subscribes once per connection, reacts to any
 * master's switch, and in ioredis 6 ends for good a connection it interrupts while reconnecting
 * (its connector's connect fails with "Connection is closed."), which left an API and a worker
 * unable to reach the promoted primary. Here one subscription per Sentinel serves the process,
 * open while any connection to the master is, and only a connection that is ready is moved; one
 * that was connecting at the switch may have been told the old primary, so it moves once ready.
 */
export class SentinelSwitchWatch {
  private readonly clients = new Set<Redis>();
  private subscribers: Redis[] = [];
  private switches = 0;
  private announcedPrimary: string | undefined;

  constructor(
    private readonly sentinels: readonly HostPort[],
    private readonly masterName: string,
    private readonly retryStrategy: (times: number) => number,
  ) {}

  /** Follows `client` from each connect until it is closed. */
  follow(client: Redis): void {
    let switchesAtConnect = 0;
    client.on('connecting', () => {
      switchesAtConnect = this.switches;
      this.add(client);
    });
    client.on('ready', () => {
      if (this.switches !== switchesAtConnect) client.disconnect(true);
    });
    client.on('end', () => this.remove(client));
  }

  private add(client: Redis): void {
    this.clients.add(client);
    if (this.subscribers.length === 0) this.subscribers = this.sentinels.map((sentinel) => this.subscribe(sentinel));
  }

  private remove(client: Redis): void {
    this.clients.delete(client);
    if (this.clients.size > 0) return;
    for (const subscriber of this.subscribers) subscriber.disconnect();
    this.subscribers = [];
  }

  private subscribe(sentinel: HostPort): Redis {
    const subscriber = new Redis({ ...sentinel, retryStrategy: this.retryStrategy, maxRetriesPerRequest: null, connectionName: `switch-watch:${this.masterName}` });
    // A Sentinel that is away is retried; the others (and a reconnect's resolution) cover for it.
    subscriber.on('error', () => undefined);
    subscriber.on('message', (channel: string, message: string) => {
      const primary = channel === SWITCH_CHANNEL ? switchedPrimary(this.masterName, message) : undefined;
      // Every Sentinel announces the same switch: the first announcement moves the connections.
      if (primary && primary !== this.announcedPrimary) {
        this.announcedPrimary = primary;
        this.moveAll();
      }
    });
    subscriber.subscribe(SWITCH_CHANNEL).catch(() => undefined);
    return subscriber;
  }

  private moveAll(): void {
    this.switches++;
    for (const client of this.clients) if (client.status === 'ready') client.disconnect(true);
  }
}
