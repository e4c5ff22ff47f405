import { appendPart } from '@app/contracts';
import type { OutputPart } from '@app/contracts';
import { ResponseOutput } from './responses-formatter';
import { stateOfAnswer } from './response-settlement';
import type { StoredResponseRecord } from './stored-responses';

const RESPONSE_ID = 'resp_0mwxabcdefghijklmnopqrst';

const record: StoredResponseRecord = {
  owner: 'key-1',
  history: [],
  inputStart: 0,
  state: { status: 'in_progress', output: [] },
  identity: {
    id: RESPONSE_ID,
    model: 'tiny-chat',
    createdAtMs: 0,
    serviceTier: 'default',
    settings: {
      instructions: null,
      tools: [],
      toolChoice: 'auto',
      parallelToolCalls: true,
      textFormat: { type: 'text' },
      maxOutputTokens: null,
      temperature: 1,
      topP: 1,
      frequencyPenalty: 0,
      presencePenalty: 0,
      topLogprobs: 0,
      logprobs: false,
      reasoning: { effort: null, summary: null },
      truncation: 'disabled',
      user: null,
      safetyIdentifier: null,
      promptCacheKey: null,
      previousResponseId: null,
      metadata: {},
      store: true,
      background: true,
    },
  },
};

/** The output events of a stream, one batch per event, as the instance that followed it live received them. */
const batches: OutputPart[][] = [
  [{ type: 'text', choice: 0, text: 'Let me ' }],
  [{ type: 'text', choice: 0, text: 'see.' }],
  [{ type: 'tool_call', choice: 0, index: 0, id: 'call_1', name: 'get_weather', arguments: '{"city":' }],
  [{ type: 'tool_call', choice: 0, index: 0, arguments: '"Paris"}' }],
];

describe('stateOfAnswer', () => {
  it("builds from a worker's stored answer (its parts merged) the items the live stream built", () => {
    const live = new ResponseOutput(RESPONSE_ID, { logprobs: false, reasoning: { effort: null, summary: null } });
    for (const batch of batches) live.add(batch);
    const streamed = live.finish(false);
    const merged: OutputPart[] = [];
    for (const part of batches.flat()) appendPart(merged, part);
    expect(merged.length).toBeLessThan(batches.flat().length);

    const usage = { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 };
    const { state, output } = stateOfAnswer(record, { parts: merged, finishReason: 'tool_calls', usage });
    expect(output).toEqual(streamed);
    expect(state).toMatchObject({ status: 'completed', output: streamed, usage });
  });

  it('ends as incomplete, its last item too, when the answer was cut short', () => {
    const usage = { prompt_tokens: 5, completion_tokens: 16, total_tokens: 21 };
    const { state } = stateOfAnswer(record, { parts: [{ type: 'text', choice: 0, text: 'Once upon' }], finishReason: 'length', usage });
    expect(state.status).toBe('incomplete');
    expect(state.output).toEqual([expect.objectContaining({ type: 'message', status: 'incomplete' })]);
  });
});
