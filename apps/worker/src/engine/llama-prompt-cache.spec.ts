import type { Token } from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import { busyNeighbours, pickSequence, sharedStart } from './llama-prompt-cache';

const tokens = (...ids: number[]): Token[] => ids as Token[];
const holding = (...ids: number[]) => ({ contextTokens: tokens(...ids) });

describe('pickSequence', () => {
  const prompt = tokens(1, 2, 3, 4, 5, 6);

  it('takes the sequence holding the longest start of the prompt, and counts it as cached', () => {
    expect(pickSequence([holding(1, 2), holding(), holding(1, 2, 3, 4), holding(9)], prompt)).toEqual({ index: 2, cachedTokens: 4 });
  });

  it('takes an empty sequence before one it would have to erase that shares less than a tenth of the prompt more', () => {
    expect(pickSequence([holding(8), holding(), holding(9)], prompt)).toEqual({ index: 1, cachedTokens: 0 });
    const long = tokens(...Array.from({ length: 100 }, (_, index) => index + 1));
    expect(pickSequence([holding(1, 2, 3, 4, 5, 6, 7, 8, 9, 0), holding(1, 2)], long)).toEqual({ index: 1, cachedTokens: 2 });
  });

  it('takes a sequence holding a conversation that goes on differently (its answer as generated) when it shares enough more', () => {
    expect(pickSequence([holding(1, 2, 3, 4, 7), holding(1, 2), holding()], prompt)).toEqual({ index: 0, cachedTokens: 4 });
    expect(pickSequence([holding(1, 7), holding(1, 2, 8)], prompt)).toEqual({ index: 1, cachedTokens: 2 });
    expect(pickSequence([holding(9, 7), holding(1, 2, 8)], prompt)).toEqual({ index: 1, cachedTokens: 2 });
  });

  it('among sequences sharing as much, erases the one idle longest', () => {
    expect(pickSequence([holding(1, 7), holding(1, 8)], prompt)).toEqual({ index: 0, cachedTokens: 1 });
    expect(pickSequence([holding(9, 7), holding(8)], prompt)).toEqual({ index: 0, cachedTokens: 0 });
  });

  it('among sequences sharing as much, takes the one beside the most busy sequences, then the one idle longest', () => {
    const beside = (busy: number, ...ids: number[]) => ({ contextTokens: tokens(...ids), busyNeighbours: busy });
    expect(pickSequence([beside(0, 1, 2), beside(1, 1, 2), beside(2, 1, 2), beside(2, 1, 2)], prompt)).toEqual({ index: 2, cachedTokens: 2 });
    expect(pickSequence([beside(0, 1, 7), beside(1, 1, 8)], prompt)).toEqual({ index: 1, cachedTokens: 1 });
    // A longer shared start still wins: it spares evaluating the tokens it holds.
    expect(pickSequence([beside(2, 1), beside(0, 1, 2)], prompt)).toEqual({ index: 1, cachedTokens: 2 });
    // A sequence to erase still needs a tenth of the prompt more than one that loses nothing.
    expect(pickSequence([beside(0), beside(2, 9)], prompt)).toEqual({ index: 0, cachedTokens: 0 });
  });

  it("leaves a sequence reserved for a job's next choice to that prompt, and takes it for another only when every idle one is reserved", () => {
    const reserved = (...ids: number[]) => ({ contextTokens: tokens(...ids), reserved: true });
    // The other job's prompt shares the most with the reserved sequence, and still goes elsewhere.
    expect(pickSequence([holding(9), reserved(1, 2, 3, 4, 7)], prompt)).toEqual({ index: 0, cachedTokens: 0 });
    expect(pickSequence([holding(9), reserved(1, 2, 3, 4, 5)], prompt)).toEqual({ index: 1, cachedTokens: 5 });
    expect(pickSequence([reserved(1, 2, 7), reserved(1, 8)], prompt)).toEqual({ index: 0, cachedTokens: 2 });
  });

  it('never counts the whole prompt as cached: the engine evaluates its last token itself', () => {
    expect(pickSequence([holding(1, 2, 3, 4, 5, 6, 7), holding(1, 2)], prompt)).toEqual({ index: 0, cachedTokens: 5 });
    expect(pickSequence([holding(1, 2, 3, 4, 5, 6)], prompt)).toEqual({ index: 0, cachedTokens: 5 });
  });
});

describe('busyNeighbours', () => {
  it('counts, for each idle sequence, the sequences next to it by id that generate now', () => {
    // Eight sequences: 1, 2 and 5 generate.
    expect(busyNeighbours([7, 0, 3, 4, 6], 8)).toEqual([0, 1, 1, 1, 1]);
    expect(busyNeighbours([0, 2, 4, 6], 8)).toEqual([1, 2, 2, 2]);
    expect(busyNeighbours([0, 1, 2], 3)).toEqual([0, 0, 0]);
  });
});

describe('sharedStart', () => {
  it("keeps what the prompt shares with its system part's own rendering", () => {
    // The system part alone renders with a different ending (the turn for the model after it).
    expect(sharedStart(tokens(1, 2, 3, 4, 5, 6), tokens(1, 2, 3, 9))).toBe(3);
  });

  it('keeps at most all but the last token of the prompt', () => {
    expect(sharedStart(tokens(1, 2, 3), tokens(1, 2, 3))).toBe(2);
  });
});
