import { ChatCompletionFormatter } from './chat-completion-formatter';

describe('ChatCompletionFormatter', () => {
  const formatter = new ChatCompletionFormatter('chatcmpl-1', 'tiny-chat', 1700000000);

  it('writes chunks that parse to the same object a plain JSON.stringify would give', () => {
    expect(JSON.parse(formatter.contentChunk('he said "hi"\n'))).toEqual({
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: 1700000000,
      model: 'tiny-chat',
      choices: [{ index: 0, delta: { content: 'he said "hi"\n' }, logprobs: null, finish_reason: null }],
    });
    expect((JSON.parse(formatter.finishChunk('length')) as { choices: unknown }).choices).toEqual([
      { index: 0, delta: {}, logprobs: null, finish_reason: 'length' },
    ]);
  });

  it('writes content chunks exactly as a generic JSON.stringify of the chunk would', () => {
    for (const includeUsage of [false, true]) {
      const subject = new ChatCompletionFormatter('chatcmpl-2', 'tiny-chat', 1700000000, includeUsage);
      for (const text of ['', 'plain', 'quote " backslash \\ newline \n tab \t', 'ünïcödé 😀 \u2028', '\ud800 lone surrogate', '</script>']) {
        const expected = JSON.stringify({
          id: 'chatcmpl-2',
          object: 'chat.completion.chunk',
          created: 1700000000,
          model: 'tiny-chat',
          choices: [{ index: 0, delta: { content: text }, logprobs: null, finish_reason: null }],
          ...(includeUsage ? { usage: null } : {}),
        });
        expect(subject.contentChunk(text)).toBe(expected);
      }
    }
  });

  it('adds usage: null to every chunk and a final usage chunk when usage is requested', () => {
    const withUsage = new ChatCompletionFormatter('chatcmpl-1', 'tiny-chat', 1700000000, true);
    expect((JSON.parse(withUsage.roleChunk()) as { usage: unknown }).usage).toBeNull();
    const usage = { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 };
    expect(JSON.parse(withUsage.usageChunk(usage))).toMatchObject({ choices: [], usage });
  });
});
