/**
 * `npm run bench:paired -- --base=<revision>`: whether a change made single requests faster, on a
 * machine whose timings drift from one run to the next by more than the change. The service as
 * built here (dist/) and as built at `revision` run side by side, each with its own Redis, one
 * worker with the synthetic engine at zero delay and its API. One client sends both the same
 * request in turn, one request at a time, alternating which side goes first, so both sides meet
 * the same moments of the machine; what is compared is each pair's difference. Reports each
 * side's latency and the median of the differences (negative: this build is faster).
 *
 * Options: --base (a commit, branch or tag whose bench/common/service-stack.ts starts a stack as this
 * one's does; required; built once into a git worktree beside this checkout) --pairs=3000
 * --warmup=300 --api-processes=1 --concurrency=1 (clients sending pairs side by side: each side
 * then carries about half of them at a time) --stream (time to the first text of a streamed
 * answer; default: a whole non-streamed answer). Writes bench/results/paired-latency.json.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { resolve } from 'node:path';
import { REPO_ROOT } from '../../tools/local-stack/services';
import { baseBuild } from './base-build';
import { stopEverythingOnSignals } from '../common/cleanup';
import { RequestMeter } from '../common/closed-loop';
import { numberOption, optionValue } from '../common/command-line';
import { fetchCompletion, streamCompletion, workloadRequests } from '../common/http-request';
import { startServiceStack } from '../common/service-stack';
import type { ServiceStack } from '../common/service-stack';
import { median, roundSummary, summarize } from '../common/stats';

const BASE = optionValue('base');
const PAIRS = numberOption('pairs', 3000);
const WARMUP = numberOption('warmup', 300);
const API_PROCESSES = numberOption('api-processes', 1);
const CONCURRENCY = numberOption('concurrency', 1);
const STREAM = process.argv.includes('--stream');
const ENGINE = { kind: 'synthetic', tokens: 64, tokenIntervalMs: 0, slots: 64, contextSize: 4096 } as const;
const TIMEOUT_MS = 30_000;

interface Side {
  stack: ServiceStack;
  agent: Agent;
  request: ReturnType<typeof workloadRequests>;
}

interface Pair {
  base: number;
  head: number;
}

/** `count` pairs from CONCURRENCY clients; each pair's two requests one after the other, in turns which first. */
async function sendPairs(sides: Record<keyof Pair, Side>, count: number): Promise<Pair[]> {
  const pairs: Pair[] = [];
  let next = 0;
  const client = async (): Promise<void> => {
    while (next < count) {
      const index = next++;
      const order: Array<keyof Pair> = index % 2 === 0 ? ['base', 'head'] : ['head', 'base'];
      const pair: Pair = { base: 0, head: 0 };
      for (const name of order) pair[name] = await timeOne(sides[name], index);
      pairs.push(pair);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, client));
  return pairs;
}

/** One request's latency in ms: to the whole answer, or with --stream to its first text. */
async function timeOne({ agent, request }: Side, index: number): Promise<number> {
  const chat = request(index, { maxTokens: ENGINE.tokens, stream: STREAM, agent, timeoutMs: TIMEOUT_MS });
  const meter = new RequestMeter();
  if (STREAM) {
    await streamCompletion(chat, meter);
    return meter.firstContentAt - meter.startedAt;
  }
  await fetchCompletion(chat);
  return performance.now() - meter.startedAt;
}

async function main(): Promise<void> {
  if (!BASE) throw new Error('--base=<revision> is required: the commit, branch or tag to compare this build with');
  stopEverythingOnSignals();
  const base = baseBuild(BASE);
  // Revisions before bench/ was grouped into folders keep the service stack at its top.
  const baseStack = ['bench/common/service-stack.ts', 'bench/service-stack.ts'].map((path) => resolve(base.root, path)).find((path) => existsSync(path));
  if (!baseStack) throw new Error(`${BASE} has no bench service stack to start`);
  const { startServiceStack: startBaseStack } = (await import(baseStack)) as {
    startServiceStack: typeof startServiceStack;
  };
  const side = (stack: ServiceStack): Side => ({
    stack,
    agent: new Agent({ keepAlive: true, maxSockets: CONCURRENCY }),
    request: workloadRequests(stack.target),
  });
  const sides = {
    base: side(await startBaseStack('paired-base', ENGINE, API_PROCESSES)),
    head: side(await startServiceStack('paired-head', ENGINE, API_PROCESSES)),
  };
  try {
    await sendPairs(sides, WARMUP);
    const pairs = await sendPairs(sides, PAIRS);
    const differences = pairs.map((pair) => pair.head - pair.base);
    const report = {
      measured: STREAM ? 'time to first text of a streamed answer' : 'whole non-streamed answer',
      settings: { pairs: PAIRS, warmup: WARMUP, apiProcesses: API_PROCESSES, concurrency: CONCURRENCY, engine: ENGINE },
      base: { revision: BASE, commit: base.commit, latencyMs: roundSummary(summarize(pairs.map((pair) => pair.base)), 2) },
      head: { latencyMs: roundSummary(summarize(pairs.map((pair) => pair.head)), 2) },
      medianDifferenceMs: Number(median(differences).toFixed(2)),
      headFasterShare: Number((differences.filter((difference) => difference < 0).length / PAIRS).toFixed(3)),
    };
    const file = resolve(REPO_ROOT, 'bench/results/paired-latency.json');
    writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
    console.log(`${report.measured}, ${PAIRS} pairs, ${CONCURRENCY} at a time, API_PROCESSES ${API_PROCESSES} (ms)   p50     p95     p99`);
    for (const [name, { latencyMs }] of [
      [`base ${BASE}`, report.base],
      ['this build', report.head],
    ] as const) {
      console.log(`  ${name.padEnd(30)} ${[latencyMs.p50, latencyMs.p95, latencyMs.p99].map((value) => value.toFixed(2).padStart(7)).join(' ')}`);
    }
    console.log(
      `  median difference ${report.medianDifferenceMs} ms; this build faster in ${(report.headFasterShare * 100).toFixed(1)}% of pairs\nwrote ${file}`,
    );
  } finally {
    for (const side of [sides.base, sides.head]) side.agent.destroy();
    await Promise.all([sides.base.stack.stop(), sides.head.stack.stop()]);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
