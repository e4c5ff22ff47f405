import type { OutputPart } from '@app/contracts';
import { TextCompletionFormatter } from './text-completion-formatter';

const usage = { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 };
const scored = (token: string, logprob: number, alternatives: Array<[string, number]> = []) => ({
  token,
  logprob,
  bytes: [...Buffer.from(token)],
  top_logprobs: alternatives.map(([text, value]) => ({ token: text, logprob: value, bytes: [...Buffer.from(text)] })),
});

describe('TextCompletionFormatter', () => {
  it("answers OpenAI's legacy logprobs: a null for an unscored first token, the sampled token among the alternatives, offsets into the text", () => {
    const parts: OutputPart[] = [
      { type: 'text', choice: 0, text: 'Hi there' },
      { type: 'logprobs', choice: 0, content: [scored(' there', -0.5, [[' you', -0.2]])], unscored: { token: 'Hi', bytes: [72, 105] } },
      { type: 'text', choice: 0, text: '!' },
      { type: 'logprobs', choice: 0, content: [scored('!', -1, [['!', -1]])] },
    ];
    const body = new TextCompletionFormatter('cmpl-1', 'm', 7, true, false).completion(parts, 1, { finishReason: 'length', usage });
    expect(body).toEqual({
      id: 'cmpl-1',
      object: 'text_completion',
      created: 7,
      model: 'm',
      choices: [
        {
          index: 0,
          text: 'Hi there!',
          finish_reason: 'length',
          logprobs: {
            tokens: ['Hi', ' there', '!'],
            token_logprobs: [null, -0.5, -1],
            top_logprobs: [null, { ' you': -0.2, ' there': -0.5 }, { '!': -1 }],
            text_offset: [0, 2, 8],
          },
        },
      ],
      usage,
    });
  });

  it('streams chunks whose offsets go on from the chunk before, and ends each of several choices with its own reason', () => {
    const formatter = new TextCompletionFormatter('cmpl-1', 'm', 7, true, true);
    formatter.textChunk(0, 'ab', { type: 'logprobs', choice: 0, content: [scored('ab', -1)] });
    const second = JSON.parse(formatter.textChunk(0, 'c', { type: 'logprobs', choice: 0, content: [scored('c', -2)] })) as {
      choices: Array<{ logprobs: { text_offset: number[] } }>;
    };
    expect(second.choices[0].logprobs.text_offset).toEqual([2]);
    const parts: OutputPart[] = [
      { type: 'text', choice: 0, text: 'a' },
      { type: 'choice_end', choice: 0, finishReason: 'stop' },
      { type: 'text', choice: 1, text: 'b' },
      { type: 'choice_end', choice: 1, finishReason: 'length' },
    ];
    const whole = new TextCompletionFormatter('cmpl-2', 'm', 7, false, false).completion(parts, 2, { finishReason: 'length', usage });
    expect(whole.choices.map(({ text, finish_reason: reason, logprobs }) => [text, reason, logprobs])).toEqual([
      ['a', 'stop', null],
      ['b', 'length', null],
    ]);
    expect(JSON.parse(formatter.usageChunk(usage))).toMatchObject({ choices: [], usage });
  });
});
