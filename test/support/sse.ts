/** One server-sent event's data, in order; `[DONE]` included as it came. */
export interface SseCapture {
  status: number;
  headers: Headers;
  /** The raw bytes as text, to check the framing itself. */
  raw: string;
  data: string[];
}

/** Posts with fetch and reads the whole SSE body, so tests see exactly what is on the wire. */
export async function postForEvents(url: string, apiKey: string, body: unknown): Promise<SseCapture> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const raw = await response.text();
  const data = raw
    .split('\n\n')
    .filter((frame) => frame.length > 0)
    .map((frame) => {
      if (!frame.startsWith('data: ')) throw new Error(`not an SSE data frame: ${JSON.stringify(frame)}`);
      return frame.slice('data: '.length);
    });
  return { status: response.status, headers: response.headers, raw, data };
}

/** One server-sent event as the client sees it: its `id:` (when it has one) and its data. */
export interface SseFrame {
  id?: string;
  /** The `event:` line (every frame of a Responses stream has one). */
  event?: string;
  data: string;
}

/**
 * Reads a live SSE response frame by frame, so a test can stop (and drop the connection) at any
 * point: `next` resolves with the next frame, or undefined at the end of the stream.
 */
export class SseReader {
  private buffered = '';
  private reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  private readonly decoder = new TextDecoder();

  constructor(
    readonly response: Response,
    private readonly controller: AbortController,
  ) {}

  static async open(url: string, apiKey: string, init: { body?: unknown; headers?: Record<string, string> } = {}): Promise<SseReader> {
    const controller = new AbortController();
    const response = await fetch(url, {
      method: init.body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', ...init.headers },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      signal: controller.signal,
    });
    return new SseReader(response, controller);
  }

  async next(): Promise<SseFrame | undefined> {
    for (;;) {
      const end = this.buffered.indexOf('\n\n');
      if (end >= 0) {
        const frame = this.buffered.slice(0, end);
        this.buffered = this.buffered.slice(end + 2);
        return parseFrame(frame);
      }
      if (!this.response.body) throw new Error(`no body (status ${this.response.status})`);
      this.reader ??= this.response.body.getReader();
      const { done, value } = await this.reader.read();
      if (done) return undefined;
      this.buffered += this.decoder.decode(value, { stream: true });
    }
  }

  /** Every frame up to the end of the stream. */
  async rest(): Promise<SseFrame[]> {
    const frames: SseFrame[] = [];
    for (let frame = await this.next(); frame; frame = await this.next()) frames.push(frame);
    return frames;
  }

  /** Drops the connection, as a client that lost its network would. */
  cut(): void {
    this.controller.abort();
  }
}

function parseFrame(frame: string): SseFrame {
  const parsed: SseFrame = { data: '' };
  for (const line of frame.split('\n')) {
    if (line.startsWith('id: ')) parsed.id = line.slice('id: '.length);
    else if (line.startsWith('event: ')) parsed.event = line.slice('event: '.length);
    else if (line.startsWith('data: ')) parsed.data = line.slice('data: '.length);
    else throw new Error(`unexpected SSE line: ${JSON.stringify(line)}`);
  }
  return parsed;
}
