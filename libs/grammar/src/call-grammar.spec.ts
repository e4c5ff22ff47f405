import { callsGrammar, exactTokens } from './call-grammar';

const SYNTAX = { prefix: '<tool_call>\n{"name": "', paramsPrefix: '", "arguments": ', suffix: '}\n</tool_call>', betweenCalls: '\n' };
const WEATHER = [{ name: 'get_weather', schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }];

/** A vocabulary of three markers, the rest a token a character (as a tiny model spells text). */
const MARKERS = ['<tool_call>', '</tool_call>', '\n'];
const tokenize = (text: string): Array<{ id: number; text: string }> => {
  const tokens: Array<{ id: number; text: string }> = [];
  for (let at = 0; at < text.length;) {
    const marker = MARKERS.findIndex((candidate) => text.startsWith(candidate, at));
    const piece = marker >= 0 ? MARKERS[marker] : text[at];
    tokens.push({ id: marker >= 0 ? 1000 + marker : piece.charCodeAt(0), text: piece });
    at += piece.length;
  }
  return tokens;
};

describe('callsGrammar', () => {
  it('writes the syntax as text by default', () => {
    const grammar = callsGrammar(WEATHER, SYNTAX, { maxCalls: 2, prefixGiven: false });
    expect(grammar.split('\n')[0]).toMatch(/^root ::= "<tool_call>\\x0A\{\\"name\\": \\"" call \("\\x0A<tool_call>/);
    expect(grammar).toContain('call ::= "get_weather\\", \\"arguments\\": " t0-root "}\\x0A</tool_call>"');
    expect(grammar).not.toContain('<[');
  });

  it('spells the suffix that closes a call as exact tokens, the rest as text', () => {
    const grammar = callsGrammar(WEATHER, SYNTAX, { maxCalls: 2, prefixGiven: false, spell: exactTokens(tokenize) });
    expect(grammar.split('\n')[0]).toMatch(/^root ::= "<tool_call>\\x0A\{\\"name\\": \\"" call \("\\x0A<tool_call>/);
    expect(grammar).toContain('call ::= "get_weather\\", \\"arguments\\": " t0-root <[125]> <[1002]> <[1001]>');
  });

  it('starts with the call when the prompt holds the first prefix, and offers no second one when one is allowed', () => {
    const grammar = callsGrammar(WEATHER, SYNTAX, { maxCalls: 1, prefixGiven: true, spell: exactTokens(tokenize) });
    expect(grammar.split('\n')[0]).toBe('root ::= call');
  });
});
