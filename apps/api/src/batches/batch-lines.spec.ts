import { isBatchError, parseLine } from './batch-lines';

const endpoint = '/v1/chat/completions';
const body = { model: 'tiny-chat', messages: [{ role: 'user', content: 'Hi' }] };
const text = (value: object): string => JSON.stringify({ custom_id: 'a', method: 'POST', url: endpoint, body, ...value });

describe('batch lines', () => {
  it('reads a well-formed line into its custom_id and body', () => {
    expect(parseLine(text({}), 1, endpoint)).toEqual({ customId: 'a', body });
  });

  it.each([
    ['not JSON', '{"custom_id":', 'invalid_json_line', null],
    ['not an object', '[1]', 'invalid_request', null],
    ['no custom_id', text({ custom_id: undefined }), 'invalid_request', 'custom_id'],
    ['a GET', text({ method: 'GET' }), 'invalid_request', 'method'],
    ['another endpoint', text({ url: '/v1/embeddings' }), 'invalid_url', 'url'],
    ['a body that is not an object', text({ body: 'hi' }), 'invalid_request', 'body'],
    ['an unknown field', text({ header: {} }), 'invalid_request', 'header'],
  ])('fails the batch for %s, naming the line', (_, line, code, param) => {
    const parsed = parseLine(line, 7, endpoint);
    expect(isBatchError(parsed) && { code: parsed.code, param: parsed.param, line: parsed.line }).toEqual({ code, param, line: 7 });
  });
});
