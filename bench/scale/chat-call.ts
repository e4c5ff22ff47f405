import { postChat, readStream } from '../../test/support/chat-requests';
import { checkPlainAnswer, checkStreamAnswer } from './answer-checks';
import type { CheckedAnswer } from './answer-checks';
import type { ScaleRequest } from './scale-workload';

/** What one HTTP attempt at one API instance came to. */
export type CallOutcome =
  | { kind: 'answered'; answer: CheckedAnswer }
  /** Nothing listens on the port: the request never reached a server, so it may be sent elsewhere. */
  | { kind: 'refused' }
  /** The connection broke after the request was sent (the instance died under it). */
  | { kind: 'connection-broken'; code: string }
  /** No end within the client's bound: a hang. */
  | { kind: 'timed-out' };

const CONNECTION_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ECONNABORTED', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);

/**
 * The socket-level code behind a fetch failure (`TypeError: fetch failed` / `terminated`), if any.
 * Read by shape, not `instanceof`: under jest the errors come from another realm.
 */
function connectionErrorCode(error: unknown): string | undefined {
  for (let cause = error as ErrorWithCode | undefined; cause; cause = cause.cause) {
    if (cause.code && CONNECTION_ERRORS.has(cause.code)) return cause.code;
  }
  return undefined;
}

interface ErrorWithCode {
  code?: string;
  cause?: ErrorWithCode;
}

/** Sends `request` to one API and reads its whole answer, never for longer than `timeoutMs`. */
export async function callChat(baseUrl: string, apiKey: string, request: ScaleRequest, timeoutMs: number): Promise<CallOutcome> {
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const response = await postChat(baseUrl, apiKey, request.body, signal);
    if (!response.headers.get('content-type')?.startsWith('text/event-stream')) {
      return { kind: 'answered', answer: checkPlainAnswer(response.status, await response.text(), request) };
    }
    let eventsAfterDone = 0;
    const reading = await readStream(response, (_event, soFar) => void (soFar.sawDone && eventsAfterDone++));
    return { kind: 'answered', answer: checkStreamAnswer(reading, eventsAfterDone, request) };
  } catch (error) {
    if (signal.aborted) return { kind: 'timed-out' };
    const code = connectionErrorCode(error);
    if (code === 'ECONNREFUSED') return { kind: 'refused' };
    if (code) return { kind: 'connection-broken', code };
    return { kind: 'answered', answer: { verdict: 'lost', detail: `unreadable answer: ${String(error)}` } };
  }
}
