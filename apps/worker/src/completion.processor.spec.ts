import { shareSlots } from './completion.processor';

describe('shareSlots', () => {
  it('shares the slots out as evenly as they go, the larger shares first', () => {
    expect(shareSlots(10, 4)).toEqual([3, 3, 2, 2]);
    expect(shareSlots(2048, 4)).toEqual([512, 512, 512, 512]);
  });

  it('gives no consumer an empty share: fewer slots than consumers means fewer consumers', () => {
    expect(shareSlots(1, 4)).toEqual([1]);
    expect(shareSlots(3, 4)).toEqual([1, 1, 1]);
  });

  it('keeps every slot', () => {
    for (const slots of [1, 5, 17, 256]) for (const consumers of [1, 2, 3, 4, 64]) expect(shareSlots(slots, consumers).reduce((a, b) => a + b, 0)).toBe(slots);
  });
});
