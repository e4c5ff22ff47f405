import { parseWorkerAnnouncement } from './worker-registry';

const announcement = {
  workerId: 'w1',
  model: 'tiny-chat',
  engine: 'llama.cpp',
  capabilities: { kinds: ['generate'], tools: true, grammar: true, logprobs: true, maxChoices: 8, logitBiasTokens: 100, unbiasableTokens: [2, 7] },
  slots: 2,
  freeSlots: 1,
  contextSize: 4096,
  announcedAt: 1,
};

describe('parseWorkerAnnouncement', () => {
  it('reads a valid announcement', () => {
    expect(parseWorkerAnnouncement(JSON.stringify(announcement))).toEqual(announcement);
  });

  it("reads an earlier version's announcement, which names no unbiasable tokens, as naming none", () => {
    const earlier: Record<string, unknown> = { ...announcement.capabilities };
    delete earlier.unbiasableTokens;
    expect(parseWorkerAnnouncement(JSON.stringify({ ...announcement, capabilities: earlier }))?.capabilities.unbiasableTokens).toEqual([]);
  });

  it("reads an earlier version's announcement, which names no kinds, as running generate jobs", () => {
    const earlier: Record<string, unknown> = { ...announcement.capabilities };
    delete earlier.kinds;
    expect(parseWorkerAnnouncement(JSON.stringify({ ...announcement, capabilities: earlier }))?.capabilities.kinds).toEqual(['generate']);
  });

  it.each([
    ['not JSON', '{'],
    ['not an object', 'null'],
    ['a string', '"worker"'],
    ['unbiasable tokens that are not token ids', JSON.stringify({ ...announcement, capabilities: { ...announcement.capabilities, unbiasableTokens: ['2'] } })],
    ['a capability missing', JSON.stringify({ ...announcement, capabilities: { ...announcement.capabilities, logprobs: undefined } })],
    ['a negative slot count', JSON.stringify({ ...announcement, slots: -1 })],
  ])('skips %s', (_name, entry) => {
    expect(parseWorkerAnnouncement(entry)).toBeUndefined();
  });
});
