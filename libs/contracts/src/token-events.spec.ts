import { decodeTokenEvent, encodeEventBatch, encodeTokenEvent, eventBatchElements, toTokenEvent } from './token-events';
import type { TokenEvent } from './token-events';

const envelope = { completionId: 'chatcmpl-1', attempt: 1, seq: 3 };
const usage = { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 };

describe('decodeTokenEvent', () => {
  const valid: TokenEvent[] = [
    { ...envelope, type: 'started', workerId: 'w1' },
    { ...envelope, type: 'output', parts: [{ type: 'text', choice: 0, text: 'Hi' }] },
    { ...envelope, type: 'heartbeat' },
    { ...envelope, type: 'end', finishReason: 'length', usage },
    { ...envelope, type: 'end', finishReason: 'stop', usage: { ...usage, prompt_tokens_details: { cached_tokens: 2 } } },
    { ...envelope, type: 'error', code: 'engine_error', message: 'boom' },
    { ...envelope, type: 'error', code: 'upstream_unavailable', message: 'down' },
    { ...envelope, type: 'error', code: 'unsupported_option', message: 'no logprobs here', param: 'logprobs' },
    {
      ...envelope,
      type: 'error',
      code: 'upstream_rejected',
      message: 'bad temperature',
      upstream: { status: 422, type: 'invalid_request_error', param: 'temperature', code: null },
    },
  ];

  it.each(valid.map((event) => [event.type, event] as const))('reads back a well-formed %s event', (_type, event) => {
    expect(decodeTokenEvent(encodeTokenEvent(event))).toEqual(event);
  });

  const malformed: Array<[string, unknown]> = [
    ['not an object', [1, 2]],
    ['no completion id', { type: 'heartbeat', attempt: 1, seq: 0 }],
    ['a fractional sequence number', { ...envelope, seq: 1.5, type: 'heartbeat' }],
    ['a negative attempt', { ...envelope, attempt: -1, type: 'heartbeat' }],
    ['an unknown type', { ...envelope, type: 'delta', text: 'old shape' }],
    ['output without parts', { ...envelope, type: 'output' }],
    ['output with no part at all', { ...envelope, type: 'output', parts: [] }],
    ['a part of an unknown kind', { ...envelope, type: 'output', parts: [{ type: 'image', choice: 0 }] }],
    ['a text part without text', { ...envelope, type: 'output', parts: [{ type: 'text', choice: 0 }] }],
    ['a part without its choice', { ...envelope, type: 'output', parts: [{ type: 'text', text: 'x' }] }],
    ['a negative choice', { ...envelope, type: 'output', parts: [{ type: 'text', choice: -1, text: 'x' }] }],
    ['an end without usage', { ...envelope, type: 'end', finishReason: 'stop' }],
    ['an unsupported option that names no field', { ...envelope, type: 'error', code: 'unsupported_option', message: 'x' }],
    ['a param on another error', { ...envelope, type: 'error', code: 'engine_error', message: 'x', param: 'tools' }],
    ['an end with an unknown finish reason', { ...envelope, type: 'end', finishReason: 'done', usage }],
    ['usage with a text count', { ...envelope, type: 'end', finishReason: 'stop', usage: { ...usage, total_tokens: '5' } }],
    [
      'usage with a negative cached count',
      { ...envelope, type: 'end', finishReason: 'stop', usage: { ...usage, prompt_tokens_details: { cached_tokens: -1 } } },
    ],
    [
      'usage with prompt token details that are not an object',
      { ...envelope, type: 'end', finishReason: 'stop', usage: { ...usage, prompt_tokens_details: 3 } },
    ],
    ['an error with an unknown code', { ...envelope, type: 'error', code: 'oops', message: 'x' }],
    ['an error without a message', { ...envelope, type: 'error', code: 'engine_error' }],
    ['started without its worker', { ...envelope, type: 'started' }],
    ['an upstream refusal without what the upstream said', { ...envelope, type: 'error', code: 'upstream_rejected', message: 'x' }],
    [
      'an upstream refusal with a status that is not a 4xx',
      { ...envelope, type: 'error', code: 'upstream_rejected', message: 'x', upstream: { status: 503, type: 't', param: null, code: null } },
    ],
    [
      'an upstream refusal with a numeric param',
      { ...envelope, type: 'error', code: 'upstream_rejected', message: 'x', upstream: { status: 400, type: 't', param: 3, code: null } },
    ],
    [
      'upstream details on another code',
      { ...envelope, type: 'error', code: 'engine_error', message: 'x', upstream: { status: 400, type: 't', param: null, code: null } },
    ],
  ];

  it.each(malformed)('rejects %s', (_what, value) => {
    expect(() => decodeTokenEvent(JSON.stringify(value))).toThrow('malformed token event');
  });

  it('rejects text that is not JSON', () => {
    expect(() => decodeTokenEvent('{"type": "output"')).toThrow();
  });
});

describe('event batches', () => {
  it('carries several events in one message, in order, and a single one as itself', () => {
    const events: TokenEvent[] = [
      { ...envelope, seq: 0, type: 'started', workerId: 'w1' },
      { ...envelope, completionId: 'chatcmpl-2', seq: 4, type: 'heartbeat' },
      { ...envelope, seq: 1, type: 'end', finishReason: 'stop', usage },
    ];
    const message = encodeEventBatch(events.map(encodeTokenEvent));
    expect(eventBatchElements(message).map(toTokenEvent)).toEqual(events);
    expect(encodeEventBatch([encodeTokenEvent(events[0])])).toBe(encodeTokenEvent(events[0]));
    expect(eventBatchElements(encodeTokenEvent(events[0])).map(toTokenEvent)).toEqual([events[0]]);
  });

  it('leaves each element to be checked on its own, so one malformed event fails only its own completion', () => {
    const elements = eventBatchElements(`[${encodeTokenEvent({ ...envelope, type: 'heartbeat' })},{"completionId":"chatcmpl-9","type":"nonsense"}]`);
    expect(toTokenEvent(elements[0]).type).toBe('heartbeat');
    expect(() => toTokenEvent(elements[1])).toThrow(/malformed/);
  });
});
