/**
 * `npm run bench:responses`: what the Responses API's front door costs over Chat Completions. One
 * stack (its Redis, one worker with the synthetic engine at zero delay, its API); one client sends
 * the same prompt through `/v1/chat/completions` and through `/v1/responses` (`store: false`,
 * as chat's default, and `store: true`, the Responses API's default) in turn, one request at a
 * time, rotating which goes first, and times each to its first text (streamed). What is compared
 * is each round's differences from chat, so the machine's drift cancels out.
 *
 * Options: --rounds=2000 --warmup=200 --tokens=16. Writes bench/results/responses-latency.json.
 */
import { writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { resolve } from 'node:path';
import { REPO_ROOT } from '../../tools/local-stack/services';
import { stopEverythingOnSignals } from '../common/cleanup';
import { RequestMeter } from '../common/closed-loop';
import { numberOption } from '../common/command-line';
import { streamCompletion, workloadRequests } from '../common/http-request';
import { startServiceStack } from '../common/service-stack';
import { median, roundSummary, summarize } from '../common/stats';
import { messagesFor } from '../common/workload';

const ROUNDS = numberOption('rounds', 2000);
const WARMUP = numberOption('warmup', 200);
const TOKENS = numberOption('tokens', 16);
const ENGINE = { kind: 'synthetic', tokens: TOKENS, tokenIntervalMs: 0, slots: 8, contextSize: 4096 } as const;
const TIMEOUT_MS = 30_000;
const DOORS = ['chat', 'responses', 'responsesStored'] as const;
type Door = (typeof DOORS)[number];

/** Time to the first `response.output_text.delta` of a streamed response; rejects on anything but a completed stream. */
function responsesFirstText(url: URL, apiKey: string, body: string, agent: Agent): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const startedAt = performance.now();
    let firstAt = -1;
    const req = request(url, {
      method: 'POST',
      agent,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${TIMEOUT_MS} ms`)), TIMEOUT_MS);
    req.on('response', (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        if (firstAt < 0 && chunk.includes('event: response.output_text.delta')) firstAt = performance.now();
        text += chunk;
      });
      response.on('end', () => {
        clearTimeout(timer);
        if (response.statusCode !== 200 || firstAt < 0 || !text.includes('event: response.completed'))
          reject(new Error(`HTTP ${response.statusCode}: ${text.slice(0, 300)}`));
        else resolvePromise(firstAt - startedAt);
      });
    });
    req.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.end(body);
  });
}

async function main(): Promise<void> {
  stopEverythingOnSignals();
  const stack = await startServiceStack('responses-latency', ENGINE, 1);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const chatRequest = workloadRequests(stack.target);
  const responsesUrl = new URL(`${stack.target.baseUrl}/responses`);
  const responsesBody = (index: number, store: boolean): string =>
    JSON.stringify({ model: stack.target.model, input: messagesFor(index), max_output_tokens: TOKENS, temperature: 0, stream: true, store });
  const timeOne = async (door: Door, index: number): Promise<number> => {
    if (door !== 'chat') return responsesFirstText(responsesUrl, stack.target.apiKey, responsesBody(index, door === 'responsesStored'), agent);
    const meter = new RequestMeter();
    await streamCompletion(chatRequest(index, { maxTokens: TOKENS, stream: true, agent, timeoutMs: TIMEOUT_MS }), meter);
    return meter.firstContentAt - meter.startedAt;
  };
  const rounds = async (count: number): Promise<Array<Record<Door, number>>> => {
    const measured: Array<Record<Door, number>> = [];
    for (let index = 0; index < count; index++) {
      const round = { chat: 0, responses: 0, responsesStored: 0 };
      for (let turn = 0; turn < DOORS.length; turn++) {
        const door = DOORS[(index + turn) % DOORS.length];
        round[door] = await timeOne(door, index);
      }
      measured.push(round);
    }
    return measured;
  };
  try {
    await rounds(WARMUP);
    const measured = await rounds(ROUNDS);
    const summary = (door: Door): ReturnType<typeof roundSummary> => roundSummary(summarize(measured.map((round) => round[door])), 3);
    const difference = (door: Door): number => Number(median(measured.map((round) => round[door] - round.chat)).toFixed(3));
    const report = {
      measured: 'time to first text of a streamed answer, same prompt, paired with chat completions',
      settings: { rounds: ROUNDS, warmup: WARMUP, engine: ENGINE },
      ttftMs: { chat: summary('chat'), responses: summary('responses'), responsesStored: summary('responsesStored') },
      medianDifferenceFromChatMs: { responses: difference('responses'), responsesStored: difference('responsesStored') },
    };
    const file = resolve(REPO_ROOT, 'bench/results/responses-latency.json');
    writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
    console.log(`time to first text, ${ROUNDS} rounds (ms)          p50     p95     p99   median difference from chat`);
    for (const door of DOORS) {
      const { p50, p95, p99 } = report.ttftMs[door];
      const label = { chat: '/v1/chat/completions', responses: '/v1/responses store:false', responsesStored: '/v1/responses store:true' }[door];
      const diff = door === 'chat' ? '' : `   ${report.medianDifferenceFromChatMs[door]}`;
      console.log(`  ${label.padEnd(40)} ${[p50, p95, p99].map((value) => value.toFixed(2).padStart(7)).join(' ')}${diff}`);
    }
    console.log(`wrote ${file}`);
  } finally {
    agent.destroy();
    await stack.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
