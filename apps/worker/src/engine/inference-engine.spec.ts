import { ContextLengthExceededError, answerBudget } from './inference-engine';

const refusal = (run: () => unknown): string => {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ContextLengthExceededError);
    return (error as Error).message;
  }
  throw new Error('expected a refusal');
};

describe('answerBudget', () => {
  it('gives the rest of the context without max_tokens, and max_tokens when it fits', () => {
    expect(answerBudget(256, 250, undefined)).toBe(6);
    expect(answerBudget(256, 250, 6)).toBe(6);
    expect(answerBudget(256, 254, undefined, 2)).toBe(2);
  });

  it('refuses a max_tokens that does not fit rather than shortening it', () => {
    expect(refusal(() => answerBudget(256, 250, 7))).toBe(
      "This model's maximum context length is 256 tokens. However, you requested 257 tokens (250 in the messages, 7 in the completion). Please reduce the length of the messages or completion.",
    );
  });

  it('refuses a prompt that leaves less than the engine needs, saying so', () => {
    expect(refusal(() => answerBudget(256, 255, undefined, 2))).toMatch(
      /your messages resulted in 255 tokens, and this engine needs at least 2 more for the completion\./,
    );
    expect(refusal(() => answerBudget(256, 255, 1, 2))).toMatch(/needs at least 2 more/);
  });

  it('words a prompt beyond the context as OpenAI does', () => {
    expect(refusal(() => answerBudget(256, 300, undefined, 2))).toBe(
      "This model's maximum context length is 256 tokens. However, your messages resulted in 300 tokens. Please reduce the length of the messages or completion.",
    );
    expect(refusal(() => answerBudget(256, 256, undefined))).toMatch(/resulted in 256 tokens\. Please/);
  });
});
