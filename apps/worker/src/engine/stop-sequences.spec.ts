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

  it('takes the stop sequence that completes first, not the first listed, however the text is chunked', () => {
    expect(run(['c d', 'b'], ['a b c d']).text).toBe('a ');
    expect(run(['abcd', 'bc'], ['xabcd']).text).toBe('xa');
    expect(run(['abcd', 'bc'], ['xa', 'b', 'cd']).text).toBe('xa');
    // Of two completing on the same unit, the longer one: it began first.
    expect(run(['bc', 'abc'], ['xabc']).text).toBe('x');
  });

  it('finds a sequence whose partial match must fall back to a shorter one', () => {
    expect(run(['aab'], ['aaab']).text).toBe('a');
    expect(run(['abab'], ['a', 'b', 'a', 'b', 'a', 'b']).text).toBe('');
    expect(run(['abac'], ['ababac']).text).toBe('ab');
  });

  it('agrees with a plain search on random text, stop sequences and chunkings', () => {
    let seed = 12345;
    const random = (below: number): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 16) % below; // the high bits: an LCG's low bits repeat with a short period
    };
    const word = (length: number): string => Array.from({ length }, () => 'ab'[random(2)]).join('');
    for (let round = 0; round < 2000; round += 1) {
      const text = word(1 + random(16));
      const stop = Array.from({ length: 1 + random(3) }, () => word(1 + random(4)));
      // The answer ends before the sequence whose end comes first (the longest one at a tie).
      const ends = stop.map((sequence) => ({ sequence, end: text.indexOf(sequence) < 0 ? Infinity : text.indexOf(sequence) + sequence.length }));
      const first = ends.reduce((best, next) => (next.end < best.end || (next.end === best.end && next.sequence.length > best.sequence.length) ? next : best));
      const expected = first.end === Infinity ? text : text.slice(0, first.end - first.sequence.length);
      const chunks: string[] = [];
      for (let at = 0; at < text.length;) {
        const size = 1 + random(4);
        chunks.push(text.slice(at, at + size));
        at += size;
      }
      const result = run(stop, chunks);
      expect({ text, stop, chunks, answer: result.text, sent: result.sent.join('') }).toEqual({ text, stop, chunks, answer: expected, sent: expected });
    }
  });

  it('goes on matching only the text after what release passed on', () => {
    const sent: string[] = [];
    const filter = new StopSequences(['END'], (text) => sent.push(text));
    filter.push('call E');
    filter.release();
    expect(filter.push('ND')).toBe(true);
    expect(filter.finish()).toBe('call END');
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

  it('matches a character outside the BMP split across chunks, and never sends half of it', () => {
    expect(run(['😀'], ['a\uD83D', '\uDE00b'])).toMatchObject({ sent: ['a'], text: 'a', stopped: true });
    expect(run(['😀!'], ['a😀', '?'])).toMatchObject({ sent: ['a', '😀?'], text: 'a😀?', stopped: false });
  });

  it('stops on a stop sequence at the very start, sending nothing', () => {
    expect(run(['He'], ['Hello'])).toMatchObject({ sent: [], text: '', stopped: true });
  });
});
