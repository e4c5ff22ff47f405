/** The WebSocket connections each API key holds open on this instance, within a bound. */
export class ConnectionsPerKey {
  private readonly open = new Map<string, number>();

  constructor(private readonly max: number) {}

  /** Counts one more for `key` and returns how to give it back (once), or undefined when the key is at its bound. */
  take(key: string): (() => void) | undefined {
    const held = this.open.get(key) ?? 0;
    if (held >= this.max) return undefined;
    this.open.set(key, held + 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const left = (this.open.get(key) ?? 1) - 1;
      if (left === 0) this.open.delete(key);
      else this.open.set(key, left);
    };
  }

  held(key: string): number {
    return this.open.get(key) ?? 0;
  }
}
