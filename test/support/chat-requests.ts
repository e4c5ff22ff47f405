/** Raw chat completion calls, so fault tests see exactly what a client would, abort included. */
import { postChatCompletion } from '../../tools/local-stack/chat-request';

export interface ChatRequestBody {
  model: string;
  messages: Array<{ role: string; content: string }>;
  [field: string]: unknown;
}

/** A request long enough to be interrupted: the tiny model repeats itself greedily for 4,000 tokens. */
export function longRequest(model: string, extra: Record<string, unknown> = {}): ChatRequestBody {
  return { model, messages: [{ role: 'user', content: 'Tell me everything.' }], temperature: 0, max_tokens: 4000, ...extra };
}

export function postChat(baseUrl: string, apiKey: string, body: ChatRequestBody, signal?: AbortSignal): Promise<Response> {
  return postChatCompletion(baseUrl, apiKey, body, signal);
}

export interface StreamReading {
  /** Parsed `data:` payloads other than [DONE], in order. */
  events: Array<Record<string, unknown>>;
  sawDone: boolean;
  content: string;
}

/** Reads an SSE body; `onEvent` may return true to stop reading (the caller then aborts). */
export async function readStream(
  response: Response,
  onEvent: (event: Record<string, unknown>, reading: StreamReading) => boolean | void = () => undefined,
): Promise<StreamReading> {
  const reading: StreamReading = { events: [], sawDone: false, content: '' };
  const decoder = new TextDecoder();
  let buffer = '';
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return reading;
    buffer += decoder.decode(value, { stream: true });
    let boundary: number;
    while ((boundary = buffer.indexOf('\n\n')) >= 0) {
      const frame = buffer.slice(0, boundary);
      buffer = buffer.slice(boundary + 2);
      const data = frame.replace(/^data: /, '');
      if (data === '[DONE]') {
        reading.sawDone = true;
        continue;
      }
      const event = JSON.parse(data) as Record<string, unknown>;
      reading.events.push(event);
      const choices = event.choices as Array<{ delta?: { content?: string } }> | undefined;
      reading.content += choices?.[0]?.delta?.content ?? '';
      if (onEvent(event, reading)) {
        await reader.cancel();
        return reading;
      }
    }
  }
}
