/**
 * The load generator: a child process (bench/service/driver-client.ts forks it) that sends chat
 * completions to the service over HTTP/1.1 keep-alive from 127.0.0.1, one socket per concurrent
 * request, and measures what a client sees.
 */
import { Agent } from 'node:http';
import { runClosedLoop, RequestMeter } from '../common/closed-loop';
import type { HoldPlan, HoldResult, HttpTarget, LoadPlan, LoadResult } from '../common/driver-protocol';
import { serveDriver } from './driver-host';
import { fetchCompletion, streamCompletion, workloadRequests } from '../common/http-request';
import type { ChatRequest } from '../common/http-request';
import { SampleBuffer } from '../common/stats';

const workloadRequest = workloadRequests(JSON.parse(process.argv[2] ?? '') as HttpTarget);

const newAgent = (sockets: number): Agent => new Agent({ keepAlive: true, maxSockets: sockets, maxFreeSockets: sockets, scheduling: 'fifo' });

function chatRequest(index: number, plan: { maxTokens: number }, stream: boolean, agent: Agent, timeoutMs: number, signal?: AbortSignal): ChatRequest {
  return workloadRequest(index, { maxTokens: plan.maxTokens, stream, agent, timeoutMs, signal });
}

async function run(plan: LoadPlan): Promise<LoadResult> {
  const agent = newAgent(plan.concurrency);
  try {
    return await runClosedLoop(plan, (index, meter, step, signal) => {
      const chat = chatRequest(index, step, step.stream, agent, step.requestTimeoutMs, signal);
      return step.stream ? streamCompletion(chat, meter) : fetchCompletion(chat);
    });
  } finally {
    agent.destroy();
  }
}

let held: { agent: Agent; cancels: Array<() => void>; settled: Array<Promise<unknown>> } | undefined;

/** Opens `plan.streams` streams, a batch at a time, and resolves once each has its first token (or failed). */
async function hold(plan: HoldPlan): Promise<HoldResult> {
  const agent = newAgent(plan.streams);
  const state = { agent, cancels: [] as Array<() => void>, settled: [] as Array<Promise<unknown>> };
  held = state;
  const ttft = new SampleBuffer();
  const errorSamples: string[] = [];
  let failed = 0;
  const startedAt = performance.now();
  for (let first = 0; first < plan.streams; first += plan.openBatch) {
    const batch = Array.from({ length: Math.min(plan.openBatch, plan.streams - first) }, (_, offset) => {
      const index = first + offset;
      return new Promise<void>((opened) => {
        const meter = new RequestMeter(undefined, () => {
          ttft.push(meter.firstContentAt - meter.startedAt);
          opened();
        });
        const chat = chatRequest(index, plan, true, agent, 24 * 60 * 60 * 1000);
        const settled = streamCompletion(chat, meter, (cancel) => state.cancels.push(cancel)).catch((error: Error) => {
          if (meter.firstContentAt < 0) {
            failed += 1;
            if (errorSamples.length < 5) errorSamples.push(error.message);
          }
          opened();
        });
        state.settled.push(settled);
      });
    });
    const deadline = new Promise<void>((resolve) => setTimeout(resolve, plan.openTimeoutMs).unref());
    await Promise.race([Promise.all(batch), deadline]);
  }
  return { opened: ttft.length, failed, errorSamples, ttftMs: ttft.summary(), openMs: performance.now() - startedAt };
}

async function release(): Promise<void> {
  if (!held) return;
  const { agent, cancels, settled } = held;
  held = undefined;
  for (const cancel of cancels) cancel();
  await Promise.allSettled(settled);
  agent.destroy();
}

serveDriver({ run, hold, release, close: release });
