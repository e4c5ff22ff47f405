import type { BatchLineDoor } from '../openai/common/batch-line-door';

/** The doors whose requests a batch can hold, by endpoint; given at composition (api.module.ts). */
export class BatchLineDoors {
  private readonly byUrl: ReadonlyMap<string, BatchLineDoor>;

  constructor(doors: readonly BatchLineDoor[]) {
    this.byUrl = new Map(doors.map((door) => [door.url, door]));
  }

  /** The endpoints a batch may name, in the order the doors were given. */
  get urls(): string[] {
    return [...this.byUrl.keys()];
  }

  /** The door of a batch's endpoint; every stored batch names one that `urls` held when it was created. */
  of(url: string): BatchLineDoor {
    const door = this.byUrl.get(url);
    if (door === undefined) throw new Error(`No front door serves batch lines for '${url}'.`);
    return door;
  }

  has(url: string): boolean {
    return this.byUrl.has(url);
  }
}
