import { MAX_JSON_DEPTH, findDepthViolation } from './json-depth';

function nested(depth: number, inner = '1'): string {
  return '['.repeat(depth) + inner + ']'.repeat(depth);
}

describe('findDepthViolation', () => {
  it('accepts nesting up to the limit and refuses one level more', () => {
    expect(findDepthViolation(nested(MAX_JSON_DEPTH))).toBeUndefined();
    expect(findDepthViolation(nested(MAX_JSON_DEPTH + 1))).toEqual({ field: null });
  });

  it('names the top-level field that nests too deeply', () => {
    const body = `{"model":"m","messages":[{"role":"user","content":"hi"}],"x\\"y":${nested(200)}}`;
    expect(findDepthViolation(body)).toEqual({ field: 'x"y' });
  });

  it('does not count brackets inside strings, escaped quotes included', () => {
    const text = JSON.stringify({ content: `\\"${'['.repeat(500)}`, more: '{'.repeat(500) });
    expect(findDepthViolation(text)).toBeUndefined();
  });

  it('takes a deep body in one pass without recursion', () => {
    expect(findDepthViolation(`{"a":${nested(1_000_000)}}`)).toEqual({ field: 'a' });
  });
});
