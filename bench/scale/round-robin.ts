/**
 * What a load balancer in front of the API instances does: round robin over the instances it
 * believes alive, and take one out of rotation the first time it refuses a connection (a
 * passive health check).
 */
export class RoundRobin {
  private next = 0;
  private readonly down = new Set<number>();

  constructor(private readonly size: number) {}

  /** The instance for the next request; undefined once every instance is down. */
  pick(): number | undefined {
    for (let tried = 0; tried < this.size; tried++) {
      const index = this.next++ % this.size;
      if (!this.down.has(index)) return index;
    }
    return undefined;
  }

  markDown(index: number): void {
    this.down.add(index);
  }
}
