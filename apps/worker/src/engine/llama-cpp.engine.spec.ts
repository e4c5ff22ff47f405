import { isContextOverflow } from './llama-cpp.engine';

describe('isContextOverflow', () => {
  // The messages node-llama-cpp 3's LlamaChat throws when an answer outgrows the context.
  it.each([
    'The default context shift strategy did not return a history that fits the context size. This may happen due to the system prompt being too long',
    'Failed to compress chat history for context shift due to a too long prompt or system message that cannot be compressed without affecting the generation quality. Consider increasing the context size or shortening the long prompt or system message.',
    'Failed to compress chat history to fit context window. Try increasing the context size or shortening the system prompt',
    'The context size is too small to generate a response',
    'The context size (512) is too small to fit the context shift size (600)',
  ])('knows "%s"', (message) => {
    expect(isContextOverflow(new Error(message))).toBe(true);
  });

  it('leaves other failures alone', () => {
    expect(isContextOverflow(new Error('Failed to decode the batch'))).toBe(false);
    expect(isContextOverflow('The context size is too small to generate a response')).toBe(false);
  });
});
