import { readServerSentEvents } from './server-sent-events';
import type { ServerSentEvent } from './server-sent-events';

/** The bytes of `text` delivered in pieces of `size` bytes, so lines and characters straddle reads. */
async function* inPieces(text: string, size: number): AsyncGenerator<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  for (let at = 0; at < bytes.length; at += size) {
    await Promise.resolve();
    yield bytes.slice(at, at + size);
  }
}

async function read(text: string, size = 1): Promise<ServerSentEvent[]> {
  const events: ServerSentEvent[] = [];
  for await (const event of readServerSentEvents(inPieces(text, size))) events.push(event);
  return events;
}

describe('readServerSentEvents', () => {
  it('skips comments and keep-alives, and reads data split anywhere, even inside a character', async () => {
    const text = ': keep-alive\n\ndata: {"a":"é€"}\n\n:\n\ndata: [DONE]\n\n';
    for (const size of [1, 2, 3, 5, 64]) {
      expect(await read(text, size)).toEqual([
        { event: undefined, data: '{"a":"é€"}' },
        { event: undefined, data: '[DONE]' },
      ]);
    }
  });

  it('reads CRLF and CR line ends, even when a CRLF is split between two reads', async () => {
    expect(await read('data: one\r\n\r\ndata: two\r\rdata: three\n\n', 1)).toEqual([
      { event: undefined, data: 'one' },
      { event: undefined, data: 'two' },
      { event: undefined, data: 'three' },
    ]);
  });

  it('joins data lines, keeps event names, and ignores id and retry', async () => {
    expect(await read('id: 7\nretry: 100\nevent: error\ndata: {"error":\ndata:{"message":"x"}}\n\n')).toEqual([
      { event: 'error', data: '{"error":\n{"message":"x"}}' },
    ]);
  });

  it("reads llama.cpp's `error:` line as an error event", async () => {
    expect(await read('error: {"code":400,"message":"too long"}\n\ndata: [DONE]\n\n')).toEqual([
      { event: 'error', data: '{"code":400,"message":"too long"}' },
      { event: undefined, data: '[DONE]' },
    ]);
  });

  it('still delivers an event cut off by the end of the stream', async () => {
    expect(await read('data: {"last":true}')).toEqual([{ event: undefined, data: '{"last":true}' }]);
  });
});
