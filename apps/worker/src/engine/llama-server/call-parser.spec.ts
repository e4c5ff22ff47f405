import { CallParser } from './call-parser';
import type { CallChunk } from './call-parser';

const QWEN = { prefix: '<tool_call>\n{"name": "', paramsPrefix: '", "arguments": ', suffix: '}\n</tool_call>', betweenCalls: '\n' };
const PARENS = { prefix: '||call: ', paramsPrefix: '(', suffix: ')', betweenCalls: '\n' };

function parse(syntax: typeof QWEN, chunks: string[], inCall = false) {
  let text = '';
  const calls: CallChunk[] = [];
  const parser = new CallParser(
    syntax,
    (piece) => (text += piece),
    (chunk) => calls.push(chunk),
    inCall,
  );
  for (const chunk of chunks) parser.push(chunk);
  parser.finish();
  const whole = new Map<number, { name: string; args: string }>();
  for (const chunk of calls) whole.set(chunk.callIndex, { name: chunk.functionName, args: (whole.get(chunk.callIndex)?.args ?? '') + chunk.paramsChunk });
  return { text, calls: [...whole.values()], pieces: calls.length, called: parser.called };
}

/** `text` cut into pieces of `size` characters, as tokens arrive. */
const pieces = (text: string, size: number): string[] =>
  Array.from({ length: Math.ceil(text.length / size) }, (_, index) => text.slice(index * size, (index + 1) * size));

describe('CallParser', () => {
  const two =
    'Let me look.<tool_call>\n{"name": "weather", "arguments": {"city": "Paris}"}}\n</tool_call>\n<tool_call>\n{"name": "time", "arguments": {}}\n</tool_call>';

  it.each([1, 3, 7, two.length])('reads text, then parallel calls, whatever the pieces (%i characters)', (size) => {
    const { text, calls, called } = parse(QWEN, pieces(two, size));
    expect(text).toBe('Let me look.');
    expect(calls).toEqual([
      { name: 'weather', args: '{"city": "Paris}"}' },
      { name: 'time', args: '{}' },
    ]);
    expect(called).toBe(true);
  });

  it('streams the arguments as they come, not only at the end', () => {
    expect(parse(QWEN, pieces(two, 2)).pieces).toBeGreaterThan(5);
  });

  it('ends arguments where their JSON closes, a suffix inside a string notwithstanding', () => {
    expect(parse(PARENS, ['||call: find({"q": "a) b \\" )"})']).calls).toEqual([{ name: 'find', args: '{"q": "a) b \\" )"}' }]);
    expect(parse(PARENS, ['||call: count(4', '2)']).calls).toEqual([{ name: 'count', args: '42' }]);
    expect(parse(PARENS, ['||call: say("hi)")']).calls).toEqual([{ name: 'say', args: '"hi)"' }]);
  });

  it('starts in the first call when the prompt ended with its prefix', () => {
    expect(parse(QWEN, ['look", "arguments": {"a": 1}}\n</tool_call>'], true)).toEqual({
      text: '',
      calls: [{ name: 'look', args: '{"a": 1}' }],
      pieces: 1,
      called: true,
    });
  });

  it('gives back text that only began like a call', () => {
    expect(parse(QWEN, ['Hello <tool', '_c'])).toEqual({ text: 'Hello <tool_c', calls: [], pieces: 0, called: false });
  });
});
