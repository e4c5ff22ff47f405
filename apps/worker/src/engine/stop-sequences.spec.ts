import { StopSequences } from './stop-sequences';

function run(stop: string[], chunks: string[]): { sent: string[]; text: string; stopped: boolean; pushed: boolean[] } {
  const sent: string[] = [];
  const filter = new StopSequences(stop, (text) => sent.push(text));
  const pushed = chunks.map((chunk) => filter.push(chunk));
  return { sent, text: filter.finish(), stopped: filter.stopped, pushed };
}

describe('StopSequences', () => {
  it('passes text on at once when no stop sequence could begin in it', () => {
    const sent: string[] = [];
    const filter = new StopSequences(['END'], (text) => sent.push(text));
    filter.push('hello ');
    expect(sent).toEqual(['hello ']);
    filter.push('world');
    expect(sent).toEqual(['hello ', 'world']);
  });

  it('ends before the first stop sequence, across chunks, and sends none of it', () => {
    const result = run(['fox', 'brown'], ['the qu', 'ick bro', 'wn fox', ' jumps']);
    expect(result).toEqual({ sent: ['the qu', 'ick '], text: 'the quick ', stopped: true, pushed: [true, true, false, false] });
  });

  it('takes the stop sequence that begins first, not the first listed', () => {
    expect(run(['c d', 'b'], ['a b c d']).text).toBe('a ');
  });

  it('sends the held-back text when the answer ends without the stop sequence completing', () => {
    // What node-llama-cpp loses at max_tokens: the tail that could still have begun a stop sequence.
    const result = run([', zzz'], ['on', ',', ' z']);
    expect(result.sent).toEqual(['on', ', z']);
    expect(result.text).toBe('on, z');
    expect(result.stopped).toBe(false);
  });

  it('holds back only the longest tail that begins a stop sequence', () => {
    const sent: string[] = [];
    const filter = new StopSequences(['abc', 'xy'], (text) => sent.push(text));
    filter.push('1ab');
    filter.push('2x');
    expect(sent).toEqual(['1', 'ab2']);
    filter.push('yz');
    expect(filter.stopped).toBe(true);
    expect(sent.join('')).toBe('1ab2');
  });

  it('sends the held-back text on release, and goes on matching what comes after', () => {
    const sent: string[] = [];
    const filter = new StopSequences(['END'], (text) => sent.push(text));
    filter.push('call E');
    expect(sent).toEqual(['call ']);
    filter.release();
    expect(sent).toEqual(['call ', 'E']);
    expect(filter.push('xEND')).toBe(false);
    expect(filter.finish()).toBe('call Ex');
  });

  it('ignores empty stop sequences and sends everything when there are none', () => {
    expect(run(['', ''], ['a', 'b'])).toEqual({ sent: ['a', 'b'], text: 'ab', stopped: false, pushed: [true, true] });
    expect(run([], ['a']).text).toBe('a');
  });

  it('stops on a stop sequence at the very start, sending nothing', () => {
    expect(run(['He'], ['Hello'])).toMatchObject({ sent: [], text: '', stopped: true });
  });
});
