/**
 * `npm run bench:ws`: what the Responses API's WebSocket mode saves an agent's tool loop. One
 * stack (its Redis, one worker with the synthetic engine at zero delay, its API) on 127.0.0.1; one
 * client runs the same 10-turn function-tool loop (each turn's input is the output of a tool the
 * previous turn "called", chained by `previous_response_id`) four ways, one after another in a
 * rotating order each round:
 * - `ws`: one WebSocket for the whole loop, `store: false` (the connection's cache continues it);
 * - `wsStored`: the same with `store: true`;
 * - `httpKeepAlive`: `POST /v1/responses` (streamed, `store: true`) over one kept-alive connection;
 * - `httpNewConnection`: the same with a new TCP connection per turn (a client without keep-alive).
 * Each loop's time includes opening its connection (the WebSocket's upgrade too) and is divided
 * by its turns. What is compared is each round's difference from the WebSocket, so the machine's
 * drift cancels out.
 *
 * Options: --rounds=60 --warmup=5 --turns=10 --tokens=16. Writes bench/results/responses-websocket.json.
 */
import { writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { resolve } from 'node:path';
import WebSocket from 'ws';
import { REPO_ROOT } from '../../tools/local-stack/services';
import { stopEverythingOnSignals } from '../common/cleanup';
import { numberOption } from '../common/command-line';
import { startServiceStack } from '../common/service-stack';
import { median, round, roundSummary, summarize } from '../common/stats';

const ROUNDS = numberOption('rounds', 60);
const WARMUP = numberOption('warmup', 5);
const TURNS = numberOption('turns', 10);
const TOKENS = numberOption('tokens', 16);
const ENGINE = { kind: 'synthetic', tokens: TOKENS, tokenIntervalMs: 0, slots: 8, contextSize: 8192 } as const;
const TIMEOUT_MS = 30_000;
const WAYS = ['ws', 'wsStored', 'httpKeepAlive', 'httpNewConnection'] as const;
type Way = (typeof WAYS)[number];

/** Turn `turn`'s input: the first asks, every later one returns the output of the tool the last turn called. */
function turnInput(loop: number, turn: number): unknown[] {
  if (turn === 0) return [{ role: 'user', content: `Loop ${loop}: look up the weather in ten cities, one at a time.` }];
  const callId = `call_${loop}_${turn}`;
  return [
    { type: 'function_call', call_id: callId, name: 'get_weather', arguments: JSON.stringify({ city: `city ${turn}` }) },
    { type: 'function_call_output', call_id: callId, output: JSON.stringify({ city: `city ${turn}`, sky: 'clear', celsius: 10 + turn }) },
  ];
}

interface Turn {
  body: Record<string, unknown>;
}

/** The turns of one loop, each chained to the response before it. */
async function runLoop(loop: number, store: boolean, send: (turn: Turn) => Promise<string>): Promise<void> {
  let previous: string | undefined;
  for (let turn = 0; turn < TURNS; turn++) {
    const body = { max_output_tokens: TOKENS, temperature: 0, store, input: turnInput(loop, turn), ...(previous ? { previous_response_id: previous } : {}) };
    previous = await send({ body });
  }
}

/** One streamed `POST /v1/responses` to its end; resolves with the response's id. */
function postTurn(url: URL, apiKey: string, body: string, agent: Agent | false): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const req = request(url, {
      method: 'POST',
      agent,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${TIMEOUT_MS} ms`)), TIMEOUT_MS);
    req.on('response', (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => {
        clearTimeout(timer);
        const id = /"id":"(resp_[^"]+)"/.exec(text)?.[1];
        if (response.statusCode !== 200 || !id || !text.includes('event: response.completed'))
          reject(new Error(`HTTP ${response.statusCode}: ${text.slice(0, 300)}`));
        else resolvePromise(id);
      });
    });
    req.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.end(body);
  });
}

/** A WebSocket opened on `/v1/responses`, and a way to run one `response.create` on it to its `response.completed`. */
async function openSocket(baseUrl: string, apiKey: string): Promise<{ send: (turn: Turn) => Promise<string>; close: () => void }> {
  const socket = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}/responses`, { headers: { authorization: `Bearer ${apiKey}` } });
  await new Promise<void>((resolveOpen, reject) => {
    socket.once('open', () => resolveOpen());
    socket.once('error', reject);
  });
  let waiting: { resolve: (id: string) => void; reject: (error: Error) => void } | undefined;
  socket.on('message', (data: Buffer) => {
    const text = data.toString();
    if (text.startsWith('{"type":"response.completed"')) waiting?.resolve((JSON.parse(text) as { response: { id: string } }).response.id);
    else if (/^\{"type":"(error|response\.failed|response\.incomplete)"/.test(text)) waiting?.reject(new Error(text.slice(0, 300)));
  });
  return {
    send: ({ body }) =>
      new Promise((resolveTurn, reject) => {
        waiting = { resolve: resolveTurn, reject };
        socket.send(JSON.stringify({ type: 'response.create', ...body }));
      }),
    close: () => socket.close(),
  };
}

async function main(): Promise<void> {
  stopEverythingOnSignals();
  const stack = await startServiceStack('responses-websocket', ENGINE, 1);
  const { baseUrl, apiKey, model } = stack.target;
  const url = new URL(`${baseUrl}/responses`);
  const withModel = (turn: Turn): string => JSON.stringify({ model, stream: true, ...turn.body });

  /** One whole loop the given way, from opening its connection to its last turn's end, per turn (ms). */
  const timeLoop = async (way: Way, loop: number): Promise<number> => {
    const startedAt = performance.now();
    if (way === 'ws' || way === 'wsStored') {
      const socket = await openSocket(baseUrl, apiKey);
      try {
        await runLoop(loop, way === 'wsStored', (turn) => socket.send({ body: { model, ...turn.body } }));
      } finally {
        socket.close();
      }
    } else if (way === 'httpKeepAlive') {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      try {
        await runLoop(loop, true, (turn) => postTurn(url, apiKey, withModel(turn), agent));
      } finally {
        agent.destroy();
      }
    } else {
      await runLoop(loop, true, (turn) => postTurn(url, apiKey, withModel(turn), false));
    }
    return (performance.now() - startedAt) / TURNS;
  };

  const rounds = async (count: number, first: number): Promise<Array<Record<Way, number>>> => {
    const measured: Array<Record<Way, number>> = [];
    for (let index = 0; index < count; index++) {
      const roundTimes = { ws: 0, wsStored: 0, httpKeepAlive: 0, httpNewConnection: 0 };
      for (let step = 0; step < WAYS.length; step++) {
        const way = WAYS[(index + step) % WAYS.length];
        roundTimes[way] = await timeLoop(way, first + index);
      }
      measured.push(roundTimes);
    }
    return measured;
  };

  try {
    await rounds(WARMUP, 0);
    const measured = await rounds(ROUNDS, WARMUP);
    const summary = (way: Way) => roundSummary(summarize(measured.map((roundTimes) => roundTimes[way])), 3);
    const difference = (way: Way): number => round(median(measured.map((roundTimes) => roundTimes[way] - roundTimes.ws)), 3);
    const report = {
      measured: `time per turn of a ${TURNS}-turn function-tool loop chained by previous_response_id, connection setup included, paired rounds`,
      settings: { rounds: ROUNDS, warmup: WARMUP, turns: TURNS, engine: ENGINE, host: '127.0.0.1' },
      perTurnMs: Object.fromEntries(WAYS.map((way) => [way, summary(way)])) as Record<Way, ReturnType<typeof summary>>,
      medianDifferenceFromWebSocketMs: Object.fromEntries(WAYS.filter((way) => way !== 'ws').map((way) => [way, difference(way)])),
    };
    const file = resolve(REPO_ROOT, 'bench/results/responses-websocket.json');
    writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
    const labels: Record<Way, string> = {
      ws: 'one WebSocket, store:false',
      wsStored: 'one WebSocket, store:true',
      httpKeepAlive: 'HTTP keep-alive, store:true',
      httpNewConnection: 'HTTP new connection per turn, store:true',
    };
    console.log(`time per turn, ${ROUNDS} rounds of ${TURNS} turns (ms)      p50     p95     p99   median difference from the WebSocket`);
    for (const way of WAYS) {
      const { p50, p95, p99 } = report.perTurnMs[way];
      const diff = way === 'ws' ? '' : `   ${difference(way) >= 0 ? '+' : ''}${difference(way)}`;
      console.log(`  ${labels[way].padEnd(44)} ${[p50, p95, p99].map((value) => value.toFixed(2).padStart(7)).join(' ')}${diff}`);
    }
    console.log(`wrote ${file}`);
  } finally {
    await stack.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
