import { setMaxListeners } from 'node:events';
import type { LoadPlan, LoadResult } from './driver-protocol';
import { SampleBuffer } from './stats';

/** Timestamps of one request's content as it arrives (performance.now() milliseconds). */
export class RequestMeter {
  readonly startedAt = performance.now();
  firstContentAt = -1;
  lastContentAt = -1;
  contentEvents = 0;

  constructor(
    private readonly gaps?: SampleBuffer,
    private readonly onFirstContent?: () => void,
  ) {}

  content(at = performance.now()): void {
    if (this.firstContentAt < 0) {
      this.firstContentAt = at;
      this.onFirstContent?.();
    } else this.gaps?.push(at - this.lastContentAt);
    this.lastContentAt = at;
    this.contentEvents += 1;
  }
}

/**
 * Runs one request, feeding `meter`; resolves with its completion tokens, rejects on any error
 * and, soon, once `signal` aborts.
 */
export type RunOne = (index: number, meter: RequestMeter, plan: LoadPlan, signal: AbortSignal) => Promise<number>;

const MAX_ERROR_SAMPLES = 5;

async function loop(
  plan: LoadPlan,
  requests: number,
  runOne: RunOne,
  onDone: (meter: RequestMeter, tokens: number | Error) => void,
  gaps?: SampleBuffer,
): Promise<number> {
  let next = 0;
  const stopAt = performance.now() + plan.durationMs;
  const hardStop = new AbortController();
  setMaxListeners(0, hardStop.signal);
  const timer = setTimeout(() => hardStop.abort(new Error(`still under way after ${plan.hardStopMs} ms: abandoned`)), plan.hardStopMs);
  const client = async (): Promise<void> => {
    while (next < requests && performance.now() < stopAt && !hardStop.signal.aborted) {
      const index = next++;
      const meter = new RequestMeter(gaps);
      try {
        onDone(meter, await runOne(index, meter, plan, hardStop.signal));
      } catch (error) {
        onDone(meter, hardStop.signal.aborted ? (hardStop.signal.reason as Error) : error instanceof Error ? error : new Error(String(error)));
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(plan.concurrency, requests) }, client));
  clearTimeout(timer);
  return next;
}

/**
 * `plan.concurrency` clients, each sending its next request as soon as its last one ends, until
 * `plan.requests` have been sent or `plan.durationMs` has passed; warm-up requests first, unmeasured. Throughput is counted over
 * the whole run, from the first send to the last answer, the same way for every driver.
 */
export async function runClosedLoop(plan: LoadPlan, runOne: RunOne): Promise<LoadResult> {
  if (plan.warmupRequests > 0) {
    const warmup = { ...plan, maxTokens: plan.warmupMaxTokens, durationMs: 60_000, hardStopMs: 120_000 };
    await loop(warmup, plan.warmupRequests, runOne, () => undefined);
  }

  const ttft = new SampleBuffer();
  const gaps = new SampleBuffer();
  const itl = new SampleBuffer();
  const latency = new SampleBuffer();
  const errorSamples: string[] = [];
  let ok = 0;
  let errors = 0;
  let completionTokens = 0;
  let deltaEvents = 0;

  const startedAt = performance.now();
  const sent = await loop(
    plan,
    plan.requests,
    runOne,
    (meter, outcome) => {
      const endedAt = performance.now();
      if (outcome instanceof Error) {
        errors += 1;
        if (errorSamples.length < MAX_ERROR_SAMPLES) errorSamples.push(outcome.message);
        return;
      }
      ok += 1;
      completionTokens += outcome;
      deltaEvents += meter.contentEvents;
      latency.push(endedAt - meter.startedAt);
      // A JSON answer's first token arrives with its last.
      ttft.push((meter.firstContentAt >= 0 ? meter.firstContentAt : endedAt) - meter.startedAt);
      if (outcome > 1 && meter.firstContentAt >= 0) itl.push((meter.lastContentAt - meter.firstContentAt) / (outcome - 1));
    },
    gaps,
  );
  const elapsedMs = performance.now() - startedAt;
  const perSecond = (count: number): number => (count * 1000) / elapsedMs;
  return {
    requests: sent,
    ok,
    errors,
    errorSamples,
    elapsedMs,
    completionTokens,
    deltaEvents,
    ttftMs: ttft.summary(),
    chunkGapMs: gaps.summary(),
    itlMs: itl.summary(),
    latencyMs: latency.summary(),
    tokensPerSecond: perSecond(completionTokens),
    requestsPerSecond: perSecond(ok),
    deltaEventsPerSecond: perSecond(deltaEvents),
  };
}
