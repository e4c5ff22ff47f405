import { appendPart, isOutputPart } from './output-parts';
import type { OutputPart } from './output-parts';

describe('appendPart', () => {
  it('merges adjacent text of one choice and keeps other choices apart, in order', () => {
    const parts: OutputPart[] = [];
    appendPart(parts, { type: 'text', choice: 0, text: 'Once' });
    appendPart(parts, { type: 'text', choice: 0, text: ' upon' });
    appendPart(parts, { type: 'text', choice: 1, text: 'A' });
    appendPart(parts, { type: 'text', choice: 0, text: ' a time' });
    expect(parts).toEqual([
      { type: 'text', choice: 0, text: 'Once upon' },
      { type: 'text', choice: 1, text: 'A' },
      { type: 'text', choice: 0, text: ' a time' },
    ]);
  });

  it('merges adjacent log probabilities of one choice', () => {
    const entry = (token: string) => ({ token, logprob: -1, bytes: [...Buffer.from(token)], top_logprobs: [] });
    const parts: OutputPart[] = [];
    appendPart(parts, { type: 'logprobs', choice: 0, content: [entry('a')] });
    appendPart(parts, { type: 'logprobs', choice: 0, content: [entry('b')] });
    appendPart(parts, { type: 'logprobs', choice: 1, content: [entry('c')] });
    expect(parts).toEqual([
      { type: 'logprobs', choice: 0, content: [entry('a'), entry('b')] },
      { type: 'logprobs', choice: 1, content: [entry('c')] },
    ]);
  });
});

describe('isOutputPart', () => {
  const entry = { token: 'a', logprob: -1, bytes: [97], top_logprobs: [{ token: 'b', logprob: -2, bytes: [98] }] };

  it('accepts log probabilities in their shape and rejects anything else', () => {
    expect(isOutputPart({ type: 'logprobs', choice: 0, content: [entry] })).toBe(true);
    expect(isOutputPart({ type: 'logprobs', choice: 0, content: [{ ...entry, logprob: 0.5 }] })).toBe(false);
    expect(isOutputPart({ type: 'logprobs', choice: 0, content: [{ ...entry, bytes: [256] }] })).toBe(false);
    expect(isOutputPart({ type: 'logprobs', choice: 0, content: [{ ...entry, top_logprobs: [{ token: 'b' }] }] })).toBe(false);
    expect(isOutputPart({ type: 'logprobs', choice: 0, content: 'a' })).toBe(false);
  });
});
