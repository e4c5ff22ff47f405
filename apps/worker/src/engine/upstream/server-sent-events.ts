/** One server-sent event: its name (`event:` field, absent for plain `data:` events) and its data. */
export interface ServerSentEvent {
  event: string | undefined;
  data: string;
}

/** A line break: CRLF, LF, or a CR that is not the last character read so far (its LF may follow). */
const LINE_BREAK = /\r\n|\n|\r(?!$)/;

/**
 * Reads server-sent events from a response body by the WHATWG rules: comment lines
 * (`: keep-alive`), `id:` and `retry:` are skipped, several `data:` lines are joined with "\n",
 * a blank line ends an event. Two tolerances for real servers: llama.cpp's server sends a
 * streamed error as an `error: {...}` line, which a strict reader drops, so it is read as an event
 * named `error`; and an event cut off by the connection closing (no blank line after it) is
 * still delivered, for the caller to judge.
 */
export async function* readServerSentEvents(body: AsyncIterable<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  let event: string | undefined;
  let data: string[] = [];

  const takeLine = (line: string): ServerSentEvent | undefined => {
    if (line === '') {
      const complete = data.length > 0 ? { event, data: data.join('\n') } : undefined;
      event = undefined;
      data = [];
      return complete;
    }
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + (line[colon + 1] === ' ' ? 2 : 1));
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
    else if (field === 'error') {
      event = 'error';
      data.push(value);
    }
    return undefined;
  };

  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    for (let match = LINE_BREAK.exec(buffer); match; match = LINE_BREAK.exec(buffer)) {
      const line = buffer.slice(0, match.index);
      buffer = buffer.slice(match.index + match[0].length);
      const complete = takeLine(line);
      if (complete) yield complete;
    }
  }
  buffer += decoder.decode();
  for (const line of buffer.split(/\r\n|\n|\r/)) {
    const complete = takeLine(line);
    if (complete) yield complete;
  }
  const cutOff = takeLine('');
  if (cutOff) yield cutOff;
}
