import type { OutputPart } from '@app/contracts';
import { ThoughtSplitter } from './thought-splitter';

const marks = { prefix: '<think>', suffix: '\n</think>\n\n' };

function split(chunks: string[], begins: ConstructorParameters<typeof ThoughtSplitter>[1], given: typeof marks | 'no marks' = marks) {
  const parts: OutputPart[] = [];
  let answer = '';
  const splitter = new ThoughtSplitter(given === 'no marks' ? undefined : given, begins, { write: (part) => parts.push(part) }, (text) => (answer += text));
  for (const chunk of chunks) splitter.push(chunk);
  splitter.finish();
  const reasoning = parts.map((part) => (part.type === 'reasoning' ? part.text : '')).join('');
  return { reasoning, answer, counted: splitter.reasoning };
}

describe('ThoughtSplitter', () => {
  it('splits a thought opened by the prompt from the answer, with the suffix split across chunks', () => {
    expect(split(['I pon', 'der\n</th', 'ink>\n', '\nThe rabbit.'], 'in thought')).toEqual({
      reasoning: 'I ponder',
      answer: 'The rabbit.',
      counted: 'I ponder',
    });
  });

  it('finds a thought the model opens itself, only at the start', () => {
    expect(split(['<thi', 'nk>hmm\n</think>\n\nYes'], 'perhaps in thought')).toEqual({ reasoning: 'hmm', answer: 'Yes', counted: 'hmm' });
    expect(split(['Yes <think>no'], 'perhaps in thought').answer).toBe('Yes <think>no');
  });

  it('keeps text that only looked like a marker, and a thought never closed as reasoning', () => {
    expect(split(['a\n</th'], 'in thought')).toEqual({ reasoning: 'a\n</th', answer: '', counted: 'a\n</th' });
    expect(split(['<th'], 'perhaps in thought').answer).toBe('<th');
  });

  it('passes everything on as the answer without markers, or when the answer starts after the thought', () => {
    expect(split(['<think>x'], 'in answer').answer).toBe('<think>x');
    expect(split(['<think>plain'], 'perhaps in thought', 'no marks').answer).toBe('<think>plain');
    expect(split(['plain'], 'perhaps in thought', { prefix: '', suffix: '</think>' }).answer).toBe('plain');
  });
});
