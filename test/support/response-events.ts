import { assertMatchesResponseEvent } from './openai-responses-schema';

/** One server-sent event of a Responses stream as it came: its `event:` line and its parsed data. */
export interface ResponseEvent {
  id?: string;
  event: string;
  data: { type: string; sequence_number: number; [key: string]: unknown };
}

/** Posts a streamed request with fetch and reads every event off the wire. */
export async function streamResponseEvents(baseUrl: string, apiKey: string, body: unknown): Promise<{ status: number; raw: string; events: ResponseEvent[] }> {
  const response = await fetch(`${baseUrl}/responses`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ ...(body as object), stream: true }),
  });
  const raw = await response.text();
  return { status: response.status, raw, events: parseResponseEvents(raw) };
}

/** Splits an SSE body into events; each must have an `event:` line and a `data:` line. */
export function parseResponseEvents(raw: string): ResponseEvent[] {
  return raw
    .split('\n\n')
    .filter((frame) => frame.length > 0)
    .map((frame) => {
      const lines = frame.split('\n');
      const field = (name: string): string | undefined => lines.find((line) => line.startsWith(`${name}: `))?.slice(name.length + 2);
      const event = field('event');
      const data = field('data');
      if (event === undefined || data === undefined) throw new Error(`not a named SSE event: ${JSON.stringify(frame)}`);
      return { id: field('id'), event, data: JSON.parse(data) as ResponseEvent['data'] };
    });
}

/**
 * The order OpenAI streams a response in: created, in_progress, then per output item its added,
 * parts and deltas, done events, then one terminal event; `sequence_number` 0, 1, 2, …; every
 * event named as its type and valid against the vendored schema.
 */
export function expectWellFormedStream(events: ResponseEvent[], terminal = 'response.completed'): void {
  expect(events.map((event) => event.data.sequence_number)).toEqual(events.map((_, index) => index));
  for (const event of events) {
    expect(event.event).toBe(event.data.type);
    assertMatchesResponseEvent(event.data);
  }
  expect(events.slice(0, 2).map((event) => event.event)).toEqual(['response.created', 'response.in_progress']);
  expect(events.at(-1)?.event).toBe(terminal);
  let open: string | undefined;
  for (const { data } of events.slice(2, -1)) {
    switch (data.type) {
      case 'response.output_item.added':
        expect(open).toBeUndefined();
        open = (data.item as { id: string }).id;
        break;
      case 'response.output_item.done':
        expect((data.item as { id: string }).id).toBe(open);
        open = undefined;
        break;
      default:
        expect(data.item_id).toBe(open);
    }
  }
  expect(open).toBeUndefined();
}

/** The event types in order, with runs of deltas shown once. */
export function eventOutline(events: ResponseEvent[]): string[] {
  const outline: string[] = [];
  for (const { event } of events) if (outline.at(-1) !== event || !event.endsWith('.delta')) outline.push(event);
  return outline;
}
