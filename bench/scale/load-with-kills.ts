import type { Verdict } from './answer-checks';
import type { CheckedAnswer } from './answer-checks';
import { callChat } from './chat-call';
import { RoundRobin } from './round-robin';
import type { ScaleRequest } from './scale-workload';

export interface LoadPlan {
  apiUrls: string[];
  apiKey: string;
  requests: ScaleRequest[];
  concurrency: number;
  /** Every request must end within this, or it is a hang. */
  requestTimeoutMs: number;
  /** No request is started after this long. */
  sendForMs: number;
  /** The kills come once this many requests have ended. */
  killAfterEnded: number;
  /** The API instance `kill` takes down. */
  killedApi: number;
  /**
   * SIGKILLs one API instance and one worker, at a moment it may choose by looking at the
   * requests in flight (keyed by seed); it calls `sending` just before the signals go out.
   */
  kill: (inFlight: ReadonlyMap<number, InFlight>, sending: () => void) => Promise<void>;
}

export interface InFlight {
  request: ScaleRequest;
  /** The instance it was sent to. */
  api: number;
}

export interface RequestRecord {
  request: ScaleRequest;
  /** The instance that answered (or broke) it. */
  api: number;
  /** Attempts refused by the killed instance before it was out of rotation. */
  refused: number;
  startedAt: number;
  endedAt: number;
  verdict: Verdict;
  detail: string;
  answer?: CheckedAnswer;
}

export interface LoadResult {
  records: RequestRecord[];
  startedAt: number;
  endedAt: number;
  /** When the kill signals went out; undefined if the load ended first. */
  killedAt?: number;
  unsent: number;
}

/**
 * Closed-loop load over the API instances: `concurrency` clients each send the next request as
 * soon as their last one ended. Mid-load one API and one worker are killed. A request refused by
 * the dead instance is sent on to a survivor (the balancer takes the dead one out of rotation);
 * one whose connection the kill broke ended with a clear error; anything else unexpected is lost.
 */
export async function loadWithKills(plan: LoadPlan): Promise<LoadResult> {
  const balancer = new RoundRobin(plan.apiUrls.length);
  const records: RequestRecord[] = [];
  const inFlight = new Map<number, InFlight>();
  const startedAt = Date.now();
  let nextRequest = 0;
  let killedAt: number | undefined;
  let kills: Promise<void> | undefined;
  const killedApiIsDead = (api: number): boolean => api === plan.killedApi && killedAt !== undefined;

  async function send(request: ScaleRequest): Promise<RequestRecord> {
    const record: RequestRecord = { request, api: -1, refused: 0, startedAt: Date.now(), endedAt: 0, verdict: 'lost', detail: '' };
    const finish = (verdict: Verdict, detail: string, answer?: CheckedAnswer): RequestRecord =>
      Object.assign(record, { verdict, detail, answer, endedAt: Date.now() });
    for (;;) {
      const api = balancer.pick();
      if (api === undefined) return finish('lost', 'no API instance left');
      record.api = api;
      inFlight.set(request.seed, { request, api });
      const remainingMs = Math.max(1, record.startedAt + plan.requestTimeoutMs - Date.now());
      const outcome = await callChat(plan.apiUrls[api], plan.apiKey, request, remainingMs);
      switch (outcome.kind) {
        case 'answered':
          return finish(outcome.answer.verdict, outcome.answer.detail, outcome.answer);
        case 'timed-out':
          return finish('lost', `HANG: no end within ${plan.requestTimeoutMs} ms`);
        case 'connection-broken':
          if (killedApiIsDead(api)) return finish('clear-error', `connection ${outcome.code} from the killed API`);
          return finish('lost', `connection ${outcome.code} from a live API`);
        case 'refused':
          if (!killedApiIsDead(api)) return finish('lost', 'connection refused by a live API');
          record.refused += 1;
          balancer.markDown(api);
      }
    }
  }

  async function client(): Promise<void> {
    while (nextRequest < plan.requests.length && Date.now() - startedAt < plan.sendForMs) {
      const request = plan.requests[nextRequest++];
      records.push(await send(request));
      inFlight.delete(request.seed);
      if (!kills && records.length >= plan.killAfterEnded) kills = plan.kill(inFlight, () => (killedAt = Date.now()));
    }
  }

  await Promise.all(Array.from({ length: plan.concurrency }, () => client()));
  await kills;
  return { records, startedAt, endedAt: Date.now(), killedAt, unsent: plan.requests.length - nextRequest };
}
