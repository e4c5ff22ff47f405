import type { Token } from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import { AnswerTokens } from './llama-logprobs';

/** Batches of tokens, each with the text LlamaChat spelled for it. */
function answerOf(batches: Array<[number[], string]>): AnswerTokens {
  const answer = new AnswerTokens();
  for (const [tokens, text] of batches) {
    answer.onToken(tokens as Token[]);
    answer.onText(text);
  }
  return answer;
}

describe('AnswerTokens', () => {
  it('keeps the tokens that spell the answer before its stop sequence, and none from it on', () => {
    const answer = answerOf([
      [[1], 'The'],
      [[2], ' cat'],
      [[3], ' sat'],
      [[4], ' down'],
    ]);
    expect(answer.within('The cat'.length)).toBe(2);
    expect(answer.tokens).toEqual([1, 2, 3, 4]);
  });

  it('leaves out a token that straddles the start of the stop sequence', () => {
    expect(
      answerOf([
        [[1], 'Hi'],
        [[2], '.\n'],
        [[3], 'Bye'],
      ]).within('Hi.'.length),
    ).toBe(1);
  });

  it('counts by the text each batch spelled, not by what its tokens read alone', () => {
    // A first token that reads "Yes" alone but " Yes" after the prompt, then the stop ".".
    expect(
      answerOf([
        [[1], ' Yes'],
        [[2], '.'],
        [[3], ' No'],
      ]).within(' Yes'.length),
    ).toBe(1);
    // "€" from three byte tokens, spelled only with the last of them, then the stop " stop".
    expect(
      answerOf([
        [[1], 'a'],
        [[2], ''],
        [[3], ''],
        [[4], '€'],
        [[5], ' stop'],
      ]).within('a€'.length),
    ).toBe(4);
  });

  it('keeps every token of a batch that ends exactly where the answer does', () => {
    expect(
      answerOf([
        [[1, 2], 'ab'],
        [[3, 4], 'cd'],
      ]).within(2),
    ).toBe(2);
  });

  describe('pieces', () => {
    it('gives each batch its text and its tokens', () => {
      const answer = answerOf([
        [[1], 'The'],
        [[2, 3], ' cat'],
        [[4], ' sat'],
      ]);
      expect(answer.pieces(11, 4)).toEqual([
        { text: [0, 3], tokens: [0, 1] },
        { text: [3, 7], tokens: [1, 3] },
        { text: [7, 11], tokens: [3, 4] },
      ]);
    });

    it('cuts at a stop sequence: a straddling batch keeps the text before it and no tokens', () => {
      const answer = answerOf([
        [[1], 'Hi'],
        [[2], '.\n'],
        [[3], 'Bye'],
      ]);
      expect(answer.pieces(3, answer.within(3))).toEqual([
        { text: [0, 2], tokens: [0, 1] },
        { text: [2, 3], tokens: [1, 1] },
      ]);
    });

    it('gives tokens that spelled no text yet to the last piece', () => {
      // The last token is the first byte of a character that max_tokens cut off.
      const answer = answerOf([
        [[1], 'a'],
        [[2], 'b'],
      ]);
      answer.onToken([3] as Token[]);
      expect(answer.pieces(2, 3)).toEqual([
        { text: [0, 1], tokens: [0, 1] },
        { text: [1, 2], tokens: [1, 3] },
      ]);
      expect(new AnswerTokens().pieces(0, 0)).toEqual([]);
    });

    it('puts the tokens of a character split over several batches in the piece that spells it', () => {
      const answer = answerOf([
        [[1], 'a'],
        [[2], ''],
        [[3], ''],
        [[4], '€'],
      ]);
      expect(answer.pieces(2, 4)).toEqual([
        { text: [0, 1], tokens: [0, 1] },
        { text: [1, 2], tokens: [1, 4] },
      ]);
    });
  });
});
