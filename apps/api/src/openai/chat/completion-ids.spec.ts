import { completionIdTime, newCompletionId } from './completion-ids';

describe('completion ids', () => {
  it('sort in creation order and carry their time', () => {
    const earlier = newCompletionId(1_790_000_000_000);
    const later = newCompletionId(1_790_000_000_001);
    expect(earlier).toMatch(/^chatcmpl-[0-9A-Za-z]{24}$/);
    expect(earlier < later).toBe(true);
    expect(completionIdTime(later)).toBe(1_790_000_000_001);
  });

  it('read no time from an id of another form (a batch line)', () => {
    expect(completionIdTime('chatcmpl-abc123-0')).toBeUndefined();
  });
});
