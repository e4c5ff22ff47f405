import type { OutputPart } from '@app/contracts';
import { ChatCompletionFormatter } from './chat-formatter';

describe('ChatCompletionFormatter', () => {
  const formatter = new ChatCompletionFormatter('chatcmpl-1', 'tiny-chat', 1700000000);

  it('writes chunks that parse to the same object a plain JSON.stringify would give', () => {
    expect(JSON.parse(formatter.contentChunk('he said "hi"\n'))).toEqual({
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: 1700000000,
      model: 'tiny-chat',
      service_tier: 'default',
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
          service_tier: 'default',
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

  describe('log probabilities', () => {
    const token = { token: 'Hi', logprob: -0.5, bytes: [72, 105], top_logprobs: [{ token: 'Hi', logprob: -0.5, bytes: [72, 105] }] };
    const ending = { finishReason: 'stop' as const, usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } };

    it('streams them with the text their tokens spelled, for the choice they belong to', () => {
      expect((JSON.parse(formatter.textWithLogprobsChunk('Hi', [token], 1)) as { choices: unknown }).choices).toEqual([
        { index: 1, delta: { content: 'Hi' }, logprobs: { content: [token], refusal: null }, finish_reason: null },
      ]);
      // Tokens that spelled no text (part of a character) come in a content chunk with no new text.
      expect((JSON.parse(formatter.partChunk({ type: 'logprobs', choice: 0, content: [token] })) as { choices: unknown }).choices).toEqual([
        { index: 0, delta: { content: '' }, logprobs: { content: [token], refusal: null }, finish_reason: null },
      ]);
    });

    it('gathers them per choice in a whole answer, and answers null where they were not asked for', () => {
      const parts: OutputPart[] = [
        { type: 'text', choice: 0, text: 'Hi' },
        { type: 'logprobs', choice: 0, content: [token] },
      ];
      const withLogprobs = new ChatCompletionFormatter('chatcmpl-1', 'tiny-chat', 1700000000, false, true);
      expect(withLogprobs.completion(parts, ending)).toMatchObject({ choices: [{ logprobs: { content: [token], refusal: null } }] });
      expect(withLogprobs.completion([], ending)).toMatchObject({ choices: [{ logprobs: { content: [], refusal: null } }] });
      expect(formatter.completion(parts, ending)).toMatchObject({ choices: [{ logprobs: null }] });
    });
  });

  describe('reasoning', () => {
    const ending = {
      finishReason: 'stop' as const,
      usage: { prompt_tokens: 1, completion_tokens: 3, total_tokens: 4, completion_tokens_details: { reasoning_tokens: 2 } },
    };

    it('streams it as reasoning_content deltas', () => {
      expect((JSON.parse(formatter.partChunk({ type: 'reasoning', choice: 0, text: 'Hmm' })) as { choices: unknown }).choices).toEqual([
        { index: 0, delta: { reasoning_content: 'Hmm' }, logprobs: null, finish_reason: null },
      ]);
    });

    it('gives it as message.reasoning_content in a whole answer, only where there was some, with usage as it came', () => {
      const parts: OutputPart[] = [
        { type: 'reasoning', choice: 0, text: 'Hm' },
        { type: 'reasoning', choice: 0, text: 'm' },
        { type: 'text', choice: 0, text: 'Hi' },
      ];
      expect(formatter.completion(parts, ending)).toMatchObject({
        choices: [{ message: { role: 'assistant', content: 'Hi', reasoning_content: 'Hmm' } }],
        usage: { completion_tokens_details: { reasoning_tokens: 2 } },
      });
      const { choices } = formatter.completion([{ type: 'text', choice: 0, text: 'Hi' }], ending) as { choices: Array<{ message: object }> };
      expect(choices[0].message).not.toHaveProperty('reasoning_content');
    });
  });
});
