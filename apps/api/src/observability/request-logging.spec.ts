import type { IncomingMessage } from 'node:http';
import { requestIdOf } from './request-logging';

const withHeader = (value: string | undefined): IncomingMessage => ({ headers: value === undefined ? {} : { 'x-request-id': value } }) as IncomingMessage;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('requestIdOf', () => {
  it("keeps a caller's plain request id", () => {
    expect(requestIdOf(withHeader('req-123_abc.def:ghi/jkl+mno=@x'))).toBe('req-123_abc.def:ghi/jkl+mno=@x');
  });

  it('replaces a missing, empty, long or log-forging id with a new UUID', () => {
    for (const given of [undefined, '', 'x'.repeat(129), '"} {"level":60', 'a b']) {
      expect(requestIdOf(withHeader(given))).toMatch(UUID);
    }
    expect(requestIdOf(withHeader(undefined))).not.toBe(requestIdOf(withHeader(undefined)));
  });
});
