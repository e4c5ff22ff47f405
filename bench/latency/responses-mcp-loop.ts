/**
 * `npm run bench:mcp-loop`: what running a remote MCP tool loop on the service costs, against a
 * client that runs the same loop itself over Chat Completions. One stack on 127.0.0.1 (its Redis,
 * one llama worker on tiny-chat, its API, allowlisting the reference MCP server
 * `@modelcontextprotocol/server-everything`, started here over streamable HTTP). Each round runs,
 * in alternating order:
 * - `service`: one `POST /v1/responses` with the `mcp` tool, `echo` forced on the first turn: the
 *   service lists the server (cached after the first round), the model calls, the service calls the
 *   server, the model answers (at most one call: `max_tool_calls: 1`);
 * - `background`: the same request with `background: true, stream: true`: the loop runs on the
 *   loops' queue (durable: every step logged in Redis before it is taken, each turn followed
 *   through its event log), and the request follows its stream to the end;
 * - `client`: the client's own loop: `POST /v1/chat/completions` with `echo` as a function tool,
 *   forced; the client calls the server itself (a new MCP session for the call, as a client
 *   without a pool would; the service keeps its sessions per server); a second chat completion
 *   with the result, `tool_choice: auto`.
 * Both decode greedily (`temperature: 0`) from the same messages, so the model does the same work
 * either way; the client's own MCP call is timed apart. What is compared is each round's
 * difference, so the machine's drift cancels out; it is the service's cost of carrying the loop
 * (a list from its cache, one more job's round trip, a call on its pooled MCP session) less the
 * client's two HTTP round trips to the service and its own session.
 *
 * `background` − `service` is what durability costs per loop.
 *
 * Options: --rounds=40 --warmup=5 --tokens=24. Writes bench/results/responses-mcp-loop.json.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import OpenAI from 'openai';
import { startEverythingServer } from '../../tools/local-stack/everything-mcp-server';
import { REPO_ROOT } from '../../tools/local-stack/services';
import { stopEverythingOnSignals } from '../common/cleanup';
import { numberOption } from '../common/command-line';
import { ARTIFACTS_DIR, BENCH_MODEL, startServiceStack } from '../common/service-stack';
import { median, round, roundSummary, summarize } from '../common/stats';

const ROUNDS = numberOption('rounds', 40);
const WARMUP = numberOption('warmup', 5);
const TOKENS = numberOption('tokens', 24);
const ENGINE = { kind: 'llama', modelPath: resolve(REPO_ROOT, 'models/tiny-chat.gguf'), parallelSequences: 1, threads: 1, contextSize: 4096 } as const;
const PROMPT = 'Echo the word hello.';
const WAYS = ['service', 'background', 'client'] as const;
type Way = (typeof WAYS)[number];

/** One MCP session for one call, as the service's gateway makes it: the call's text output. */
async function callEcho(url: string, args: Record<string, unknown>): Promise<string> {
  const client = new Client({ name: 'bench-client', version: '1.0.0' }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    const result = await client.callTool({ name: 'echo', arguments: args });
    return (result.content as Array<{ type: string; text?: string }>).map((part) => part.text ?? '').join('\n');
  } finally {
    await client.close();
  }
}

async function main(): Promise<void> {
  stopEverythingOnSignals();
  const everything = await startEverythingServer('mcp-loop-everything', undefined, resolve(ARTIFACTS_DIR, 'logs', 'mcp-loop-everything.log'));
  const stack = await startServiceStack('responses-mcp-loop', ENGINE, 1, { MCP_ALLOWED_SERVERS: `http://127.0.0.1:${everything.port}/` });
  const { baseUrl, apiKey } = stack.target;
  const openai = new OpenAI({ baseURL: baseUrl, apiKey, maxRetries: 0 });
  const listed = new Client({ name: 'bench-client', version: '1.0.0' }, { capabilities: {} });
  await listed.connect(new StreamableHTTPClientTransport(new URL(everything.url)));
  const echo = (await listed.listTools()).tools.find((tool) => tool.name === 'echo');
  await listed.close();
  if (!echo) throw new Error('the reference server lists no echo tool');
  const echoTool: OpenAI.Chat.ChatCompletionTool = {
    type: 'function',
    function: { name: 'echo', description: echo.description, parameters: echo.inputSchema },
  };
  let clientToolMs = 0;

  const loopRequest = {
    model: BENCH_MODEL,
    input: PROMPT,
    temperature: 0,
    tools: [{ type: 'mcp' as const, server_label: 'everything', server_url: everything.url, allowed_tools: ['echo'], require_approval: 'never' as const }],
    tool_choice: { type: 'mcp' as const, server_label: 'everything', name: 'echo' },
    parallel_tool_calls: false,
    max_tool_calls: 1,
    max_output_tokens: TOKENS * 2,
  };
  const expectCall = (output: OpenAI.Responses.ResponseOutputItem[]): void => {
    if (!output.some((item) => item.type === 'mcp_call' && item.output)) throw new Error(`no call made: ${JSON.stringify(output)}`);
  };

  const service = async (): Promise<void> => {
    expectCall((await openai.responses.create({ ...loopRequest, store: false })).output);
  };

  const background = async (): Promise<void> => {
    const stream = await openai.responses.create({ ...loopRequest, background: true, stream: true });
    for await (const event of stream) {
      if (event.type === 'response.completed' || event.type === 'response.incomplete') return expectCall(event.response.output);
      if (event.type === 'response.failed' || event.type === 'error') throw new Error(`the background loop failed: ${JSON.stringify(event)}`);
    }
    throw new Error('the background loop stream ended without its response');
  };

  const client = async (): Promise<void> => {
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: PROMPT }];
    const base = { model: BENCH_MODEL, temperature: 0, tools: [echoTool], parallel_tool_calls: false, max_tokens: TOKENS };
    const first = await openai.chat.completions.create({ ...base, messages, tool_choice: { type: 'function', function: { name: 'echo' } } });
    const call = first.choices[0].message.tool_calls?.[0];
    if (call?.type !== 'function') throw new Error('the forced call did not come');
    const toolStart = performance.now();
    const output = await callEcho(everything.url, JSON.parse(call.function.arguments) as Record<string, unknown>);
    clientToolMs = performance.now() - toolStart;
    messages.push(first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: output });
    await openai.chat.completions.create({ ...base, messages, tool_choice: 'auto' });
  };

  const runs: Record<Way, () => Promise<void>> = { service, background, client };
  const timed = async (run: () => Promise<void>): Promise<number> => {
    const startedAt = performance.now();
    await run();
    return performance.now() - startedAt;
  };
  const rounds = async (count: number): Promise<Array<Record<Way | 'clientTool', number>>> => {
    const measured: Array<Record<Way | 'clientTool', number>> = [];
    for (let index = 0; index < count; index++) {
      const times = { service: 0, background: 0, client: 0, clientTool: 0 };
      // Each way goes first, second and last equally often.
      const order = [...WAYS.slice(index % WAYS.length), ...WAYS.slice(0, index % WAYS.length)];
      for (const way of index % 2 === 0 ? order : order.reverse()) times[way] = await timed(runs[way]);
      times.clientTool = clientToolMs;
      measured.push(times);
    }
    return measured;
  };

  try {
    await rounds(WARMUP);
    const measured = await rounds(ROUNDS);
    const summary = (key: Way | 'clientTool') => roundSummary(summarize(measured.map((times) => times[key])), 2);
    const difference = round(median(measured.map((times) => times.service - times.client)), 2);
    const durability = round(median(measured.map((times) => times.background - times.service)), 2);
    const report = {
      measured:
        'one forced MCP call and the answer after it: on the service (Responses mcp tool), the same as a durable background loop (streamed), and a client loop over Chat Completions; paired rounds',
      settings: { rounds: ROUNDS, warmup: WARMUP, maxTokensPerTurn: TOKENS, engine: { ...ENGINE, modelPath: 'models/tiny-chat.gguf' }, host: '127.0.0.1' },
      loopMs: { service: summary('service'), background: summary('background'), client: summary('client') },
      clientToolCallMs: summary('clientTool'),
      medianServiceMinusClientMs: difference,
      medianBackgroundMinusServiceMs: durability,
    };
    const file = resolve(REPO_ROOT, 'bench/results/responses-mcp-loop.json');
    writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
    console.log(`one MCP loop, ${ROUNDS} paired rounds (ms)        p50     p95     p99`);
    for (const [label, key] of [
      ['service runs the loop (Responses mcp)', 'service'],
      ['  as a durable background loop, streamed', 'background'],
      ['client runs the loop (2 chat completions)', 'client'],
      ["  of which the client's MCP call", 'clientTool'],
    ] as const) {
      const { p50, p95, p99 } = summary(key);
      console.log(`  ${label.padEnd(42)} ${[p50, p95, p99].map((value) => value.toFixed(2).padStart(7)).join(' ')}`);
    }
    console.log(`median paired difference, service − client: ${difference >= 0 ? '+' : ''}${difference} ms`);
    console.log(`median paired difference, background − service: ${durability >= 0 ? '+' : ''}${durability} ms`);
    console.log(`wrote ${file}`);
  } finally {
    await stack.stop();
    await everything.process.stop('SIGKILL');
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
