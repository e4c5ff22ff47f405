import type { BenchResults, ComparisonLevel } from '../results-model';
import { percent, round } from '../../common/stats';

function table(rows: string[][]): string {
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  return rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column])).join('  ')).join('\n');
}

function comparisonTable(levels: ComparisonLevel[]): string {
  const cpuLines: string[] = [];
  const rows = [['c', 'side', 'TTFT p50/p95/p99 ms', 'ITL p50/p95/p99 ms', 'tok/s (spread)', 'req/s', 'deltas/s', 'tok/req', 'errors']];
  for (const level of levels) {
    for (const [side, figures] of [
      ['engine', level.engine],
      ['service', level.service],
    ] as const) {
      rows.push([
        String(level.concurrency),
        side,
        `${figures.ttftMs.p50} / ${figures.ttftMs.p95} / ${figures.ttftMs.p99}`,
        `${figures.itlMs.p50} / ${figures.itlMs.p95} / ${figures.itlMs.p99}`,
        `${Math.round(figures.tokensPerSecond)} (${Math.round(figures.spread.tokensPerSecond.worst)}–${Math.round(figures.spread.tokensPerSecond.best)})`,
        String(round(figures.requestsPerSecond, 1)),
        String(Math.round(figures.deltaEventsPerSecond)),
        String(figures.tokensPerRequest),
        String(figures.errors),
      ]);
    }
    const costs = level.service.cpuPerRequestMs;
    if (costs) {
      const perDelta = level.service.cpuPerDeltaUs ?? {};
      const cores = level.service.cpu ?? {};
      const described = Object.entries(costs).map(([name, ms]) => `${name} ${cores[name]} cores = ${ms} ms/req, ${perDelta[name] ?? 0} µs/delta`);
      cpuLines.push(`  c=${level.concurrency} service cpu: ${described.join('; ')}`);
    }
    rows.push([
      '',
      'ratio',
      `+${level.addedTtftMs.p50} / +${level.addedTtftMs.p95} / +${level.addedTtftMs.p99}`,
      '',
      `${percent(level.ratio.tokensPerSecond)} (pooled ${percent(level.ratio.pooledTokensPerSecond)})`,
      percent(level.ratio.requestsPerSecond),
      '',
      '',
      '',
    ]);
  }
  return [table(rows), ...cpuLines].join('\n');
}

/** llama-server alone, the service on it and the service on node-llama-cpp, level by level (pooled tokens/s). */
function threeColumns({ service, llamaEngine }: NonNullable<BenchResults['llamaServer']>): string {
  const rows = [['c', 'llama-server alone: tok/s, TTFT p50', 'service, ENGINE=llama-server', 'service, ENGINE=llama']];
  for (const level of service) {
    const other = llamaEngine.find((candidate) => candidate.concurrency === level.concurrency);
    const side = (compared: ComparisonLevel | undefined): string =>
      compared
        ? `${Math.round(compared.service.pooledTokensPerSecond)} tok/s (${percent(compared.ratio.pooledTokensPerSecond)} ± ${percent(compared.ratio.repeatStandardError)}), ${compared.service.ttftMs.p50} ms (+${compared.addedTtftMs.p50})`
        : '—';
    rows.push([String(level.concurrency), `${Math.round(level.engine.pooledTokensPerSecond)} tok/s, ${level.engine.ttftMs.p50} ms`, side(level), side(other)]);
  }
  return table(rows);
}

/** The figures as text tables, for the terminal. */
export function consoleReport(results: BenchResults): string {
  const out: string[] = [];
  if (results.llama) out.push('\nllama.cpp: engine alone vs service (same model, sequences, threads, prompts)', comparisonTable(results.llama));
  if (results.llamaServer) {
    out.push("\nllama.cpp's own server alone vs the service on each engine (same model, slots, threads, prompts)", threeColumns(results.llamaServer));
    out.push('\nllama-server alone vs the service on ENGINE=llama-server', comparisonTable(results.llamaServer.service));
    out.push('\nllama-server alone vs the service on ENGINE=llama', comparisonTable(results.llamaServer.llamaEngine));
  }
  if (results.synthetic) out.push('\nSynthetic engine (64 tokens, 10 ms apart): engine alone vs service', comparisonTable(results.synthetic));
  if (results.relay) {
    const described = results.relay.map((level) => `c=${level.concurrency}: ${level.tokenIntervalMs} ms between tokens`).join(', ');
    out.push(`\nRelay: long synthetic streams, one delta event per token (${described})`, comparisonTable(results.relay));
  }
  if (results.openStreams) {
    const rows = [['streams', 'opened', 'failed', 'open s', 'RSS/stream KB', 'heap/stream KB', 'external/stream KB', 'API RSS MB', 'Redis api-* conns']];
    for (const level of results.openStreams.levels) {
      rows.push([
        String(level.streams),
        String(level.opened),
        String(level.failed),
        String(level.openSeconds),
        String(round(level.perStreamBytes.rss / 1024, 1)),
        String(round(level.perStreamBytes.heapUsed / 1024, 1)),
        String(round(level.perStreamBytes.external / 1024, 1)),
        String(round(level.apiWhileOpen.rssBytes / 1024 / 1024, 1)),
        String(level.redisApiConnections),
      ]);
    }
    out.push(`\nOpen streams (idle: ${results.openStreams.redisApiConnectionsIdle} Redis api-* connections)`, table(rows), ...results.openStreams.skipped);
  }
  if (results.nonStream) {
    const rows = [['c', 'req/s (spread)', 'latency p50/p95/p99 ms', 'errors', 'cpu cores (cpu per request)']];
    for (const level of results.nonStream) {
      const figures = level.service;
      rows.push([
        String(level.concurrency),
        `${Math.round(figures.requestsPerSecond)} (${Math.round(figures.spread.requestsPerSecond.worst)}–${Math.round(figures.spread.requestsPerSecond.best)})`,
        `${figures.latencyMs.p50} / ${figures.latencyMs.p95} / ${figures.latencyMs.p99}`,
        String(figures.errors),
        Object.entries(figures.cpu ?? {})
          .map(([name, cores]) => `${name} ${cores} (${figures.cpuPerRequestMs?.[name] ?? 0} ms/req)`)
          .join(', '),
      ]);
    }
    out.push('\nNon-stream requests (synthetic engine, zero delay)', table(rows));
  }
  if (results.embeddings) {
    const rows = [
      ['model', 'contexts × threads', 'c', 'engine alone emb/s (runs)', 'service emb/s', 'service input tok/s', 'ratio', 'request p50/p99 ms', 'errors'],
    ];
    for (const level of results.embeddings) {
      rows.push([
        level.model,
        `${level.contexts} × ${level.threadsPerContext}`,
        String(level.concurrency),
        `${level.engine.embeddingsPerSecond} (${level.engineRuns.join(', ')})`,
        String(level.service.embeddingsPerSecond),
        String(level.service.inputTokensPerSecond),
        percent(level.ratio),
        `${round(level.requestLatencyMs.p50, 1)} / ${round(level.requestLatencyMs.p99, 1)}`,
        String(level.service.errors),
      ]);
    }
    out.push(
      `\nEmbeddings: node-llama-cpp alone (one context, one call at a time) vs service (requests of ${results.embeddings[0]?.inputsPerRequest ?? 0} inputs)`,
      table(rows),
    );
  }
  for (const profile of results.profiles ?? []) {
    out.push(`\nAPI CPU profile, ${profile.phase}: ${profile.idlePercent}% idle; self time by package:`);
    out.push(`  ${profile.byPackage.map((entry) => `${entry.name} ${entry.selfPercent}%`).join(', ')}`);
    out.push(...profile.top.slice(0, 15).map((entry) => `  ${String(entry.selfPercent).padStart(5)}%  ${entry.function}  ${entry.location}`));
  }
  out.push('\nBars');
  for (const bar of results.bars) out.push(`  ${bar.met === null ? '–' : bar.met ? 'MET   ' : 'NOT MET'}  ${bar.name} (target ${bar.target}): ${bar.measured}`);
  return out.join('\n');
}
