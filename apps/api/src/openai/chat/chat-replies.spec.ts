import type { FastifyReply } from 'fastify';
import { PassThrough } from 'node:stream';
import type { ServerResponse } from 'node:http';
import { OpenAiError } from '../../errors/openai-error';
import { ChatCompletionFormatter } from './chat-formatter';
import { BufferedChatCompletion, StreamedChatCompletion } from './chat-replies';

const usage = { prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 };
const text = (value: string, choice = 0) => ({ type: 'text' as const, choice, text: value });

/** A reply whose JSON body or raw socket bytes the test can read. */
function fakeReply() {
  const sent: unknown[] = [];
  const socket = new PassThrough();
  let wire = '';
  socket.on('data', (chunk: Buffer) => (wire += chunk.toString()));
  const raw = Object.assign(socket, {
    destroyed: false,
    statusCode: 0,
    writeHead(status: number) {
      raw.statusCode = status;
      return raw;
    },
    // The headers go with the first frame written; a stream opened early sends them at once.
    flushHeaders: jest.fn(),
  }) as unknown as ServerResponse & { statusCode: number };
  const reply = {
    raw,
    hijack: jest.fn(),
    send: (body: unknown) => {
      sent.push(body);
      return Promise.resolve();
    },
  } as unknown as FastifyReply;
  return { reply, sent, raw, wire: () => wire };
}

const dataEvents = (wire: string): string[] =>
  wire
    .split('\n\n')
    .filter((frame) => frame.startsWith('data: '))
    .map((frame) => frame.slice('data: '.length));

describe('BufferedChatCompletion', () => {
  it('collects the output parts into one chat.completion body', async () => {
    const { reply, sent } = fakeReply();
    const response = new BufferedChatCompletion(reply, new ChatCompletionFormatter('chatcmpl-1', 'tiny-chat', 1));
    response.write([text('Once')]);
    response.write([text(' upon'), text(' a time')]);
    await response.finish({ finishReason: 'stop', usage });
    expect(sent).toEqual([
      expect.objectContaining({
        object: 'chat.completion',
        choices: [{ index: 0, message: { role: 'assistant', content: 'Once upon a time', refusal: null }, logprobs: null, finish_reason: 'stop' }],
        usage,
      }),
    ]);
  });

  it('drops what it received when a new attempt restarts the answer', async () => {
    const { reply, sent } = fakeReply();
    const response = new BufferedChatCompletion(reply, new ChatCompletionFormatter('chatcmpl-1', 'tiny-chat', 1));
    expect(response.canRestart).toBe(true);
    response.write([text('half an ans')]);
    response.restart();
    response.write([text('A whole answer')]);
    await response.finish({ finishReason: 'stop', usage });
    expect((sent[0] as { choices: Array<{ message: { content: string } }> }).choices[0].message.content).toBe('A whole answer');
  });

  it('rethrows a failure for the exception filter: nothing is on the wire', () => {
    const { reply } = fakeReply();
    const response = new BufferedChatCompletion(reply, new ChatCompletionFormatter('chatcmpl-1', 'tiny-chat', 1));
    const error = OpenAiError.internal('boom');
    expect(() => response.fail(error)).toThrow(error);
  });
});

describe('StreamedChatCompletion', () => {
  it('streams the role, each part, the finish reason and usage, then [DONE]', async () => {
    const { reply, raw, wire } = fakeReply();
    const response = new StreamedChatCompletion(reply, new ChatCompletionFormatter('chatcmpl-1', 'tiny-chat', 1, true));
    expect(response.canRestart).toBe(false);
    response.write([text('Hel'), text('lo')]);
    await response.finish({ finishReason: 'length', usage });
    const events = dataEvents(wire());
    expect(raw.statusCode).toBe(200);
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((event) => JSON.parse(event) as { choices: Array<{ delta: object; finish_reason: string | null }>; usage: unknown });
    expect(chunks.map((chunk) => chunk.choices[0]?.delta)).toEqual([{ role: 'assistant', content: '' }, { content: 'Hel' }, { content: 'lo' }, {}, undefined]);
    expect(chunks[3].choices[0].finish_reason).toBe('length');
    expect(chunks[4].usage).toEqual(usage);
  });

  it('rethrows a failure before the first frame, so it is a plain HTTP error', () => {
    const { reply, wire } = fakeReply();
    const response = new StreamedChatCompletion(reply, new ChatCompletionFormatter('chatcmpl-1', 'tiny-chat', 1));
    const error = OpenAiError.invalidRequest('too long', 'messages', 'context_length_exceeded');
    expect(() => response.fail(error)).toThrow(error);
    expect(wire()).toBe('');
  });

  it('ends an open stream with an OpenAI error event and [DONE]', () => {
    const { reply, wire } = fakeReply();
    const response = new StreamedChatCompletion(reply, new ChatCompletionFormatter('chatcmpl-1', 'tiny-chat', 1));
    response.write([text('partial')]);
    response.fail(new OpenAiError(500, 'server_error', 'The worker stopped.', null, 'worker_lost'));
    const events = dataEvents(wire());
    expect(JSON.parse(events.at(-2) ?? '')).toEqual({ error: { message: 'The worker stopped.', type: 'server_error', param: null, code: 'worker_lost' } });
    expect(events.at(-1)).toBe('[DONE]');
  });

  it('numbers the frames of a resumable stream and sends only those after the client has', async () => {
    const frames = async (after: number): Promise<string> => {
      const { reply, wire } = fakeReply();
      const response = new StreamedChatCompletion(reply, new ChatCompletionFormatter('chatcmpl-1', 'tiny-chat', 1), { after });
      response.open();
      response.write([text('Hel')]);
      response.write([text('lo')]);
      await response.finish({ finishReason: 'stop', usage });
      return wire();
    };
    const whole = await frames(-1);
    expect(whole.match(/^id: \d+$/gm)).toEqual(['id: 0', 'id: 1', 'id: 2', 'id: 3']);
    const resumed = await frames(1);
    expect(resumed.match(/^id: \d+$/gm)).toEqual(['id: 2', 'id: 3']);
    // The frames after the cut are the very frames the whole stream had there.
    expect(whole.endsWith(resumed)).toBe(true);
  });

  it('sends each piece of text with the log probabilities of its tokens in one chunk, never a logprobs-only chunk', async () => {
    const { reply, wire } = fakeReply();
    const response = new StreamedChatCompletion(reply, new ChatCompletionFormatter('chatcmpl-1', 'tiny-chat', 1, false, true));
    const token = (value: string) => ({ token: value, logprob: -1, bytes: [...Buffer.from(value)], top_logprobs: [] });
    // The publisher may cut between a piece of text and its logprobs: they still go out together.
    response.write([text('Hel'), { type: 'logprobs', choice: 0, content: [token('Hel')] }, text('lo')]);
    response.write([{ type: 'logprobs', choice: 0, content: [token('lo')] }, text(' there')]);
    await response.finish({ finishReason: 'stop', usage });
    const chunks = dataEvents(wire())
      .slice(0, -1)
      .map((event) => JSON.parse(event) as { choices: Array<{ delta: { content?: string }; logprobs: { content: Array<{ token: string }> } | null }> });
    expect(chunks.map(({ choices: [choice] }) => [choice.delta.content, choice.logprobs?.content.map(({ token: value }) => value)])).toEqual([
      ['', undefined],
      ['Hel', ['Hel']],
      ['lo', ['lo']],
      // Text no logprobs followed still goes out, before the finish chunk.
      [' there', []],
      [undefined, undefined],
    ]);
  });
});
