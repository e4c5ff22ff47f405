import type { TokenLogprob } from '@app/contracts';
import { tokensBefore } from './llama-logprobs';

const scored = (token: string, bytes = [...Buffer.from(token, 'utf8')]): TokenLogprob => ({ token, logprob: -1, bytes, top_logprobs: [] });

describe('tokensBefore', () => {
  it('keeps the tokens that spell the answer before its stop sequence, and none from it on', () => {
    const tokens = [scored('The'), scored(' cat'), scored(' sat'), scored(' down')];
    expect(tokensBefore(tokens, 'The cat').map((entry) => entry.token)).toEqual(['The', ' cat']);
  });

  it('leaves out a token that straddles the start of the stop sequence', () => {
    expect(tokensBefore([scored('Hi'), scored('.\n'), scored('Bye')], 'Hi.').map((entry) => entry.token)).toEqual(['Hi']);
  });

  it('counts bytes, so the pieces of one character (text U+FFFD or nothing) count as that character', () => {
    // "€" (E2 82 AC) from three byte tokens, then the stop sequence " stop".
    const tokens = [scored('a'), scored('\uFFFD', [0xe2]), scored('', [0x82]), scored('\uFFFD', [0xac]), scored(' stop')];
    expect(tokensBefore(tokens, 'a€')).toEqual(tokens.slice(0, 4));
  });
});
