import type { OutputPart } from '@app/contracts';
import { ResponseOutput } from './responses-formatter';
import type { OutputSettings, ResponseEventFrame } from './responses-formatter';

const RESPONSE_ID = 'resp_0mwxabcdefghijklmnopqrst';

const settings = (logprobs = false, summary: string | null = null): OutputSettings => ({ logprobs, reasoning: { effort: null, summary } });

function run(parts: OutputPart[][], cutShort = false, withLogprobs = false, summary: string | null = null): { frames: ResponseEventFrame[]; items: unknown[] } {
  const frames: ResponseEventFrame[] = [];
  const output = new ResponseOutput(RESPONSE_ID, settings(withLogprobs, summary), (frame) => frames.push(frame));
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
    expect(data(frames[2])).toEqual({
      type: 'response.output_text.delta',
      item_id: 'msg_0mwxabcdefghijklmnopqrst0',
      output_index: 0,
      content_index: 0,
      delta: 'Hel',
      logprobs: [],
      sequence_number: 2,
    });
    expect(items).toEqual([
      {
        type: 'message',
        id: 'msg_0mwxabcdefghijklmnopqrst0',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: 'Hello', annotations: [], logprobs: [] }],
      },
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
    expect(items[1]).toEqual({
      type: 'function_call',
      id: 'fc_0mwxabcdefghijklmnopqrst1',
      call_id: 'call_1',
      name: 'get_weather',
      arguments: '{"city":"Rome"}',
      status: 'completed',
    });
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
    const silent = new ResponseOutput(RESPONSE_ID, settings());
    silent.add(parts);
    expect(silent.finish(false)).toEqual(run([parts]).items);
  });

  describe("a reasoning model's thought", () => {
    const thought: OutputPart[][] = [
      [{ type: 'reasoning', choice: 0, text: 'The ' }],
      [{ type: 'reasoning', choice: 0, text: 'rabbit' }],
      [{ type: 'text', choice: 0, text: 'Hi' }],
    ];
    const ID = 'rs_0mwxabcdefghijklmnopqrst0';

    it('comes first as a reasoning item with its text as reasoning_text content, streamed as reasoning_text events', () => {
      const { frames, items } = run(thought);
      expect(frames.map((frame) => frame.event).slice(0, 7)).toEqual([
        'response.output_item.added',
        'response.content_part.added',
        'response.reasoning_text.delta',
        'response.reasoning_text.delta',
        'response.reasoning_text.done',
        'response.content_part.done',
        'response.output_item.done',
      ]);
      expect(frames.map((frame) => data(frame).sequence_number)).toEqual(frames.map((_, index) => index));
      expect(frames.map((frame) => data(frame).type)).toEqual(frames.map((frame) => frame.event));
      expect(data(frames[0])).toMatchObject({ item: { type: 'reasoning', id: ID, summary: [], content: [], status: 'in_progress' } });
      expect(data(frames[3])).toEqual({
        type: 'response.reasoning_text.delta',
        item_id: ID,
        output_index: 0,
        content_index: 0,
        delta: 'rabbit',
        sequence_number: 3,
      });
      expect(data(frames[4])).toMatchObject({ text: 'The rabbit' });
      expect(items).toEqual([
        { type: 'reasoning', id: ID, summary: [], content: [{ type: 'reasoning_text', text: 'The rabbit' }], status: 'completed' },
        expect.objectContaining({ type: 'message', id: 'msg_0mwxabcdefghijklmnopqrst1', content: [expect.objectContaining({ text: 'Hi' })] }),
      ]);
    });

    it('is also the summary when reasoning.summary is asked for, streamed as reasoning_summary events', () => {
      const { frames, items } = run(thought, false, false, 'auto');
      expect(frames.map((frame) => frame.event).slice(0, 11)).toEqual([
        'response.output_item.added',
        'response.content_part.added',
        'response.reasoning_summary_part.added',
        'response.reasoning_text.delta',
        'response.reasoning_summary_text.delta',
        'response.reasoning_text.delta',
        'response.reasoning_summary_text.delta',
        'response.reasoning_text.done',
        'response.content_part.done',
        'response.reasoning_summary_text.done',
        'response.reasoning_summary_part.done',
      ]);
      expect(data(frames[6])).toEqual({
        type: 'response.reasoning_summary_text.delta',
        item_id: ID,
        output_index: 0,
        summary_index: 0,
        delta: 'rabbit',
        sequence_number: 6,
      });
      expect(data(frames[10])).toEqual({
        type: 'response.reasoning_summary_part.done',
        item_id: ID,
        output_index: 0,
        summary_index: 0,
        part: { type: 'summary_text', text: 'The rabbit' },
        sequence_number: 10,
      });
      expect(items[0]).toEqual({
        type: 'reasoning',
        id: ID,
        summary: [{ type: 'summary_text', text: 'The rabbit' }],
        content: [{ type: 'reasoning_text', text: 'The rabbit' }],
        status: 'completed',
      });
    });

    it('cut short, ends the output as an incomplete reasoning item; ended alone, is followed by an empty message', () => {
      const cut = run(thought.slice(0, 2), true, false, 'auto');
      expect(cut.items).toEqual([expect.objectContaining({ type: 'reasoning', status: 'incomplete' })]);
      expect(data(cut.frames.find((frame) => frame.event === 'response.reasoning_summary_part.done')!)).toMatchObject({ status: 'incomplete' });
      expect(run(thought.slice(0, 2)).items).toEqual([
        expect.objectContaining({ type: 'reasoning', status: 'completed' }),
        expect.objectContaining({ type: 'message', content: [expect.objectContaining({ text: '' })], status: 'completed' }),
      ]);
    });

    it('between calls or text, opens a new reasoning item each time', () => {
      const { items } = run([
        [
          { type: 'reasoning', choice: 0, text: 'a' },
          { type: 'text', choice: 0, text: 'b' },
          { type: 'reasoning', choice: 0, text: 'c' },
        ],
      ]);
      expect((items as Array<{ type: string }>).map((item) => item.type)).toEqual(['reasoning', 'message', 'reasoning']);
    });
  });
});
