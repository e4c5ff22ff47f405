import { appendPart } from './output-parts';
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
});
