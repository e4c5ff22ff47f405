/**
 * `npm run bench:schemas`: the collected MCP tools (test/fixtures/mcp-tools.json) through the
 * schema checker and grammar builder: how many are accepted (not strict, and strict), and what
 * building each one's grammar costs, p50 / p99, split into the checker and builder (the API's
 * admission and the worker's build, the same code) and llama.cpp's compile of the GBNF text.
 * Generation speed with and without a schema is `npm run bench:structured`. Writes
 * bench/results/schema-tools.json.
 */
import { grammarText, schemaGrammar } from '@app/grammar';
import type { JsonValue } from '@app/contracts';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';

interface CollectedTool {
  server: string;
  name: string;
  parameters: JsonValue;
}

const percentile = (values: number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return +sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))].toFixed(3);
};

async function main(): Promise<void> {
  const tools = JSON.parse(readFileSync('test/fixtures/mcp-tools.json', 'utf8')) as CollectedTool[];
  const { getLlama } = await import('node-llama-cpp');
  const llama = await getLlama({ gpu: false, build: 'never' });
  const buildMs: number[] = [];
  const compileMs: number[] = [];
  const grammarChars: number[] = [];
  let accepted = 0;
  let acceptedStrict = 0;
  const ignored: Record<string, number> = {};
  for (const tool of tools) {
    const started = performance.now();
    const built = schemaGrammar(tool.parameters, { strict: false });
    if (!built.ok) continue;
    const text = grammarText(built.rules, '\n\n\n\n');
    buildMs.push(performance.now() - started);
    accepted++;
    if (schemaGrammar(tool.parameters, { strict: true }).ok) acceptedStrict++;
    for (const problem of built.ignored) ignored[`${problem.keyword}: ${problem.message}`] = (ignored[`${problem.keyword}: ${problem.message}`] ?? 0) + 1;
    grammarChars.push(text.length);
    const compileStart = performance.now();
    await llama.createGrammar({ grammar: text });
    compileMs.push(performance.now() - compileStart);
  }
  const results = {
    tools: tools.length,
    servers: [...new Set(tools.map((tool) => tool.server))],
    accepted,
    acceptedStrict,
    ignored,
    checkAndBuildMs: { p50: percentile(buildMs, 50), p99: percentile(buildMs, 99), max: percentile(buildMs, 100) },
    llamaCompileMs: { p50: percentile(compileMs, 50), p99: percentile(compileMs, 99), max: percentile(compileMs, 100) },
    grammarChars: { p50: percentile(grammarChars, 50), max: percentile(grammarChars, 100) },
    measuredAt: new Date().toISOString(),
  };
  mkdirSync('bench/results', { recursive: true });
  writeFileSync('bench/results/schema-tools.json', `${JSON.stringify(results, null, 2)}\n`);
  console.log(JSON.stringify(results, null, 2));
  await llama.dispose();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
