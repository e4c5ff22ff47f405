import type { OutputPart } from '@app/contracts';
import { ResponseOutput } from './response-output';
import type { ResponseEventFrame } from './response-output';

const RESPONSE_ID = 'resp_0mwxabcdefghijklmnopqrst';

function run(parts: OutputPart[][], cutShort = false, withLogprobs = false): { frames: ResponseEventFrame[]; items: unknown[] } {
  const frames: ResponseEventFrame[] = [];
  const output = new ResponseOutput(RESPONSE_ID, withLogprobs, (frame) => frames.push(frame));
  for (const batch of parts) output.add(batch);
  return { frames, items: output.finish(cutShort) };
}

const data = (frame: ResponseEventFrame): Record<string, unknown> => JSON.parse(frame.data) as Record<string, unknown>;

describe('ResponseOutput', () => {
  it("emits a message's events in OpenAI's order with sequence numbers from 0", () => {
    const { frames, items } = run([[{ type: 'text', choice: 0, text: 'Hel' }], [{ type: 'text', choice: 0, text: 'lo' }]]);
    expect(frames.map((frame) => frame.event)).toEqual([
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
    ]);
    expect(frames.map((frame) => data(frame).sequence_number)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(frames.map((frame) => data(frame).type)).toEqual(frames.map((frame) => frame.event));
    expect(data(frames[2])).toEqual({ type: 'response.output_text.delta', item_id: 'msg_0mwxabcdefghijklmnopqrst0', output_index: 0, content_index: 0, delta: 'Hel', logprobs: [], sequence_number: 2 });
    expect(items).toEqual([
      { type: 'message', id: 'msg_0mwxabcdefghijklmnopqrst0', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Hello', annotations: [], logprobs: [] }] },
    ]);
  });

  it('closes the text before a function call and streams its arguments', () => {
    const { frames, items } = run([
      [
        { type: 'text', choice: 0, text: 'Let me see.' },
        { type: 'tool_call', choice: 0, index: 0, id: 'call_1', name: 'get_weather', arguments: '{"city":' },
        { type: 'tool_call', choice: 0, index: 0, arguments: '"Rome"}' },
      ],
    ]);
    expect(frames.map((frame) => frame.event).slice(5)).toEqual([
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
    ]);
    expect(items[1]).toEqual({ type: 'function_call', id: 'fc_0mwxabcdefghijklmnopqrst1', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Rome"}', status: 'completed' });
  });

  it('marks the last item incomplete when the answer was cut short, and an empty answer still has its message', () => {
    expect(run([[{ type: 'text', choice: 0, text: 'Once' }]], true).items).toMatchObject([{ status: 'incomplete' }]);
    const empty = run([]);
    expect(empty.items).toMatchObject([{ type: 'message', content: [{ text: '' }] }]);
    expect(empty.frames.at(-1)?.event).toBe('response.output_item.done');
  });

  it('gives each delta the log probabilities of its own tokens', () => {
    const token = { token: 'Hi', logprob: -0.5, bytes: [72, 105], top_logprobs: [] };
    const { frames } = run([[{ type: 'text', choice: 0, text: 'Hi' }], [{ type: 'logprobs', choice: 0, content: [token] }]], false, true);
    const delta = frames.find((frame) => frame.event === 'response.output_text.delta');
    expect(data(delta!)).toMatchObject({ delta: 'Hi', logprobs: [token] });
    expect(data(frames.find((frame) => frame.event === 'response.output_text.done')!)).toMatchObject({ text: 'Hi', logprobs: [token] });
  });

  it('builds the same items without events (a whole, non-streamed answer)', () => {
    const parts: OutputPart[] = [{ type: 'text', choice: 0, text: 'Same' }];
    const silent = new ResponseOutput(RESPONSE_ID, false);
    silent.add(parts);
    expect(silent.finish(false)).toEqual(run([parts]).items);
  });
});
