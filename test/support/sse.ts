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
