import { request } from 'node:http';
import type { Agent, IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { RequestMeter } from './closed-loop';
import type { HttpTarget } from './driver-protocol';
import { requestBody } from './workload';

export interface ChatRequest {
  url: URL;
  apiKey: string;
  body: string;
  agent: Agent;
  timeoutMs: number;
  /** Abandons the request (destroys its socket) when aborted. */
  signal?: AbortSignal;
  /** Given the response's headers as they arrive (the API's `x-request-id`). */
  onHeaders?: (headers: IncomingHttpHeaders) => void;
}

/** What a workload request needs besides its index: the rest of a ChatRequest. */
export type WorkloadRequestOptions = Omit<ChatRequest, 'url' | 'apiKey' | 'body'> & { maxTokens: number; stream: boolean };

/** Builds the index-th workload request (workload.ts) to `target`, whose URL is parsed once. */
export function workloadRequests(target: HttpTarget): (index: number, options: WorkloadRequestOptions) => ChatRequest {
  const url = new URL(`${target.baseUrl}/chat/completions`);
  return (index, { maxTokens, stream, ...rest }) => ({ url, apiKey: target.apiKey, body: requestBody(index, target.model, maxTokens, stream), ...rest });
}

/** A chunk frame that carries text; the first chunk's `"content":""` (role only) does not match. */
const CONTENT_MARK = '"delta":{"content":"';
const USAGE_MARK = '"usage":{';

function post(chat: ChatRequest, onResponse: (response: IncomingMessage) => void, fail: (error: Error) => void): () => void {
  const req = request(chat.url, {
    method: 'POST',
    agent: chat.agent,
    headers: {
      authorization: `Bearer ${chat.apiKey}`,
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(chat.body),
    },
  });
  const timer = setTimeout(() => req.destroy(new Error(`no answer within ${chat.timeoutMs} ms`)), chat.timeoutMs);
  const abandon = (): void => void req.destroy(new Error('abandoned'));
  chat.signal?.addEventListener('abort', abandon, { once: true });
  const settle = (): void => {
    clearTimeout(timer);
    chat.signal?.removeEventListener('abort', abandon);
  };
  req.on('response', (response) => {
    response.on('close', settle);
    chat.onHeaders?.(response.headers);
    onResponse(response);
  });
  req.on('error', (error) => {
    settle();
    fail(error);
  });
  req.end(chat.body);
  return () => req.destroy();
}

function readAll(response: IncomingMessage, done: (text: string) => void): void {
  let text = '';
  response.setEncoding('utf8');
  response.on('data', (chunk: string) => (text += chunk));
  response.on('end', () => done(text));
}

/** A non-200 answer, described with the start of its body. */
function statusError(response: IncomingMessage, done: (error: Error) => void): void {
  readAll(response, (text) => done(new Error(`HTTP ${response.statusCode}: ${text.slice(0, 200)}`)));
}

/**
 * One streamed completion: records when each content chunk arrives and resolves with the
 * completion tokens of the final usage chunk. A stream that ends without `[DONE]`, or with an
 * error event, is an error. Frames are recognised by a few fixed markers rather than parsed, so
 * the load generator stays cheap next to the service it measures.
 */
export function streamCompletion(chat: ChatRequest, meter: RequestMeter, onOpen?: (cancel: () => void) => void): Promise<number> {
  return new Promise((resolve, reject) => {
    const cancel = post(
      chat,
      (response) => {
        if (response.statusCode !== 200) return statusError(response, reject);
        let pending = '';
        let tokens = -1;
        let done = false;
        let failure: string | undefined;
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          const at = performance.now();
          pending += chunk;
          let end = pending.indexOf('\n\n');
          while (end >= 0) {
            const frame = pending.slice(0, end);
            pending = pending.slice(end + 2);
            end = pending.indexOf('\n\n');
            if (frame.includes(CONTENT_MARK)) meter.content(at);
            else if (frame === 'data: [DONE]') done = true;
            else if (frame.startsWith('data: {"error"')) failure = frame.slice(6, 300);
            else if (frame.includes(USAGE_MARK)) tokens = (JSON.parse(frame.slice(6)) as { usage: { completion_tokens: number } }).usage.completion_tokens;
          }
        });
        response.on('end', () => {
          if (failure) reject(new Error(`error event: ${failure}`));
          else if (!done || tokens < 0) reject(new Error('stream ended without usage and [DONE]'));
          else resolve(tokens);
        });
        // After `end` this changes nothing; before it, the connection broke mid-stream.
        response.on('close', () => reject(new Error('connection closed mid-stream')));
        response.on('error', reject);
      },
      reject,
    );
    onOpen?.(cancel);
  });
}

/** One non-streamed completion: resolves with its completion tokens. */
export function fetchCompletion(chat: ChatRequest): Promise<number> {
  return new Promise((resolve, reject) => {
    post(
      chat,
      (response) => {
        if (response.statusCode !== 200) return statusError(response, reject);
        readAll(response, (text) => {
          try {
            resolve((JSON.parse(text) as { usage: { completion_tokens: number } }).usage.completion_tokens);
          } catch {
            reject(new Error(`unreadable body: ${text.slice(0, 200)}`));
          }
        });
      },
      reject,
    );
  });
}
