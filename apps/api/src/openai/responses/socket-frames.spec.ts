import { OpenAiError } from '../../errors/openai-error';
import { readClientFrame } from './socket-frames';

const frame = (value: unknown): Buffer => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));

const refusal = (read: () => unknown): OpenAiError => {
  try {
    read();
  } catch (error) {
    if (error instanceof OpenAiError) return error;
    throw error;
  }
  throw new Error('the frame was accepted');
};

describe('readClientFrame', () => {
  it('takes a response.create frame apart: the create body, and whether to generate', () => {
    const read = readClientFrame(frame({ type: 'response.create', model: 'm', input: 'Hi', stream: true, generate: false }), false, 1024);
    expect(read).toEqual({ type: 'response.create', body: { model: 'm', input: 'Hi' }, generate: false });
    expect(readClientFrame(frame({ type: 'response.create', model: 'm' }), false, 1024)).toMatchObject({ generate: true });
    // Its lane apart from the body.
    expect(readClientFrame(frame({ type: 'response.create', model: 'm', stream_id: 'lane-1' }), false, 1024)).toEqual({
      type: 'response.create',
      body: { model: 'm' },
      generate: true,
      streamId: 'lane-1',
    });
  });

  it('reads a response.steer: the response it names and its input', () => {
    const read = readClientFrame(frame({ type: 'response.steer', previous_response_id: 'resp_1', input: 'Shorter.' }), false, 1024);
    expect(read).toEqual({ type: 'response.steer', previousResponseId: 'resp_1', input: 'Shorter.' });
  });

  it("accepts Codex's response.processed acknowledgement", () => {
    expect(readClientFrame(frame({ type: 'response.processed', response_id: 'resp_1' }), false, 1024)).toEqual({ type: 'response.processed' });
  });

  it.each([
    ['a frame over the limit', frame({ type: 'response.create', input: 'x'.repeat(2000) }), false, 413, 'request_too_large', null],
    ['a binary frame', frame({ type: 'response.create' }), true, 400, 'invalid_frame', null],
    ['invalid JSON', frame('{"type": '), false, 400, 'invalid_json', null],
    ['a JSON array', frame([1]), false, 400, 'invalid_value', 'type'],
    ['an unknown type', frame({ type: 'response.cancel' }), false, 400, 'unknown_event_type', 'type'],
    ['a steer naming no response', frame({ type: 'response.steer', input: 'x' }), false, 400, 'invalid_value', 'previous_response_id'],
    ['an empty stream_id', frame({ type: 'response.create', stream_id: '' }), false, 400, 'invalid_value', 'stream_id'],
    ['a stream_id too long', frame({ type: 'response.create', stream_id: 'x'.repeat(129) }), false, 400, 'invalid_value', 'stream_id'],
    ['no type', frame({ model: 'm' }), false, 400, 'unknown_event_type', 'type'],
    ['background', frame({ type: 'response.create', background: true }), false, 400, 'invalid_value', 'background'],
    ['a generate that is not a boolean', frame({ type: 'response.create', generate: 'no' }), false, 400, 'invalid_type', 'generate'],
    ['nesting past the bound', frame(`{"type":"response.create","input":${'['.repeat(70)}${']'.repeat(70)}}`), false, 400, 'nesting_too_deep', 'input'],
  ])('refuses %s', (_what, data, isBinary, status, code, param) => {
    const error = refusal(() => readClientFrame(data, isBinary, 1024));
    expect({ status: error.status, code: error.code, param: error.param }).toEqual({ status, code, param });
  });
});
