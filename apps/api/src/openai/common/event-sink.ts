/**
 * Where a stream's events go, one JSON text each: server-sent events over HTTP (SseResponse) or
 * text frames of a WebSocket (the Responses API's WebSocket mode). The formatter that numbers and
 * words the events is the same whichever carries them.
 */
export interface EventSink {
  /** Whether the stream has begun on the wire: a failure then is an event, no longer an HTTP error. */
  readonly isOpen: boolean;
  /** Begins the stream before any event (a resumed stream may have nothing new yet). */
  open(): void;
  /** @param event the event's name (SSE's `event:` line); its JSON carries it as `type` too. */
  send(json: string, event?: string): void;
  /** The stream is over. @param done whether SSE's `data: [DONE]` ends it (Chat Completions). */
  end(done?: boolean): void;
}
