/**
 * The last step of the kit's run.sh: one JSON file (the host, the build, the model and the
 * benchmark's llama phase as it wrote it) and a short text table of engine alone vs service.
 *
 *   node kit/summarize-run.js --bench results.json --backend cuda --shape qwen-0.5b --type q8_0 \
 *     --gpu-info gpu.txt --build-seconds 200 --build-options GGML_CUDA_FA=OFF --elapsed-seconds 400 --json out.json --text out.txt
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { BenchResults, ComparisonLevel } from '../../bench/service/results-model';

export interface GpuCheck {
  generatedAt: string;
  backend: string;
  /** nvidia-smi's name, driver version, compute capability and memory, as it printed them. */
  gpu: string | null;
  model: { shape: string; type: string };
  buildSeconds: number;
  /** What the addon was compiled for, as run.sh passed it to CMake (e.g. `CMAKE_CUDA_ARCHITECTURES=90 GGML_CUDA_FA=OFF`). */
  buildOptions: string;
  elapsedSeconds: number;
  levels: Array<{
    streams: number;
    /** All runs of a side pooled: their tokens over their summed time. */
    engineTokensPerSecond: number;
    serviceTokensPerSecond: number;
    /** service / engine, pooled, and the standard error of the repeats' pair ratios (0 for one run). */
    ratio: number;
    ratioError: number;
    /** service / engine, best run of each side. */
    bestRunsRatio: number;
    engineTtftP50Ms: number;
    serviceTtftP50Ms: number;
    tokensPerAnswer: { engine: number; service: number };
    errors: number;
  }>;
  bench: BenchResults;
}

function level(entry: ComparisonLevel): GpuCheck['levels'][number] {
  return {
    streams: entry.concurrency,
    engineTokensPerSecond: entry.engine.pooledTokensPerSecond,
    serviceTokensPerSecond: entry.service.pooledTokensPerSecond,
    ratio: entry.ratio.pooledTokensPerSecond,
    ratioError: entry.ratio.repeatStandardError,
    bestRunsRatio: entry.ratio.tokensPerSecond,
    engineTtftP50Ms: entry.engine.ttftMs.p50,
    serviceTtftP50Ms: entry.service.ttftMs.p50,
    tokensPerAnswer: { engine: entry.engine.tokensPerRequest, service: entry.service.tokensPerRequest },
    errors: entry.engine.errors + entry.service.errors,
  };
}

export function summaryText(check: GpuCheck): string {
  const lines = [
    `GPU check: ${check.backend}${check.gpu ? ` on ${check.gpu}` : ''}`,
    `model ${check.model.shape} (${check.model.type}); addon compiled in ${check.buildSeconds} s (${check.buildOptions}); whole run ${check.elapsedSeconds} s`,
    'streams  engine tok/s  service tok/s  service/engine ± SE  best runs  TTFT p50 engine / service (ms)  tokens/answer  errors',
  ];
  for (const row of check.levels) {
    lines.push(
      [
        String(row.streams).padStart(7),
        row.engineTokensPerSecond.toFixed(1).padStart(13),
        row.serviceTokensPerSecond.toFixed(1).padStart(14),
        `${(row.ratio * 100).toFixed(1)}% ± ${(row.ratioError * 100).toFixed(1)}`.padStart(20),
        `${(row.bestRunsRatio * 100).toFixed(1)}%`.padStart(10),
        `${row.engineTtftP50Ms.toFixed(1)} / ${row.serviceTtftP50Ms.toFixed(1)}`.padStart(31),
        `${row.tokensPerAnswer.engine} / ${row.tokensPerAnswer.service}`.padStart(14),
        String(row.errors).padStart(7),
      ].join(' '),
    );
  }
  return `${lines.join('\n')}\n`;
}

function main(): void {
  const { values } = parseArgs({
    options: {
      bench: { type: 'string' },
      backend: { type: 'string' },
      shape: { type: 'string' },
      type: { type: 'string' },
      'gpu-info': { type: 'string' },
      'build-seconds': { type: 'string' },
      'build-options': { type: 'string' },
      'elapsed-seconds': { type: 'string' },
      json: { type: 'string' },
      text: { type: 'string' },
    },
    strict: true,
  });
  const { bench, json, text } = values;
  if (!bench || !json || !text) throw new Error('--bench, --json and --text are needed');
  const results = JSON.parse(readFileSync(bench, 'utf8')) as BenchResults;
  const gpuInfo = values['gpu-info'];
  const check: GpuCheck = {
    generatedAt: new Date().toISOString(),
    backend: values.backend ?? 'unknown',
    gpu: gpuInfo && existsSync(gpuInfo) ? readFileSync(gpuInfo, 'utf8').trim() || null : null,
    model: { shape: values.shape ?? 'unknown', type: values.type ?? 'unknown' },
    buildSeconds: Number(values['build-seconds'] ?? 0),
    buildOptions: values['build-options'] ?? 'unknown',
    elapsedSeconds: Number(values['elapsed-seconds'] ?? 0),
    levels: (results.llama ?? []).map(level),
    bench: results,
  };
  if (check.levels.length === 0) throw new Error(`${bench} holds no llama phase`);
  writeFileSync(json, `${JSON.stringify(check, null, 2)}\n`);
  writeFileSync(text, summaryText(check));
}

main();
