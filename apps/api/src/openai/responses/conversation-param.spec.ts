import { plainToInstance } from 'class-transformer';
import { CreateResponseDto } from './responses-request.dto';
import { conversationOf, toResponseJob } from './responses-job.mapper';

const request = (body: Record<string, unknown>): CreateResponseDto => plainToInstance(CreateResponseDto, { model: 'tiny-chat', input: 'Hi', ...body });

/** The error `read` throws (a test failure when it throws none). */
function refusalOf(read: () => unknown): unknown {
  try {
    read();
  } catch (error) {
    return error;
  }
  throw new Error('no refusal');
}

describe('conversation on POST /v1/responses', () => {
  it('takes an id or {id}, and nothing without it', () => {
    expect(conversationOf(request({ conversation: 'conv_1' }))).toBe('conv_1');
    expect(conversationOf(request({ conversation: { id: 'conv_2' } }))).toBe('conv_2');
    expect(conversationOf(request({}))).toBeUndefined();
    expect(conversationOf(request({ conversation: null }))).toBeUndefined();
  });

  it.each([[42], [{}], [{ id: 7 }], ['']])('refuses %j, naming conversation', (conversation) => {
    expect(refusalOf(() => conversationOf(request({ conversation })))).toMatchObject({ param: 'conversation', code: 'invalid_type' });
  });

  it('refuses it with previous_response_id (OpenAI: mutually exclusive) and with store: false', () => {
    expect(refusalOf(() => conversationOf(request({ conversation: 'conv_1', previous_response_id: 'resp_1' })))).toMatchObject({
      status: 400,
      param: 'conversation',
      code: 'mutually_exclusive_parameters',
    });
    expect(refusalOf(() => conversationOf(request({ conversation: 'conv_1', store: false })))).toMatchObject({ status: 400, param: 'store' });
  });

  it("is echoed in the response's settings", () => {
    const items = [
      { type: 'message' as const, id: 'msg_1', role: 'user' as const, content: [{ type: 'input_text' as const, text: 'Hi' }], status: 'completed' as const },
    ];
    expect(toResponseJob(request({ conversation: { id: 'conv_3' } }), items, 0, 'resp_x', Date.now(), 1000).settings.conversation).toBe('conv_3');
    expect(toResponseJob(request({}), items, 0, 'resp_x', Date.now(), 1000).settings.conversation).toBeNull();
  });
});
