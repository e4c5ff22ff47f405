/**
 * `npm run bench`: the service against the engine alone, on this machine.
 *
 *   npm run bench              # full plan, ~6-9 minutes on 2 cores
 *   npm run bench -- --quick   # ~1 minute: fewer levels, shorter runs
 *   npm run bench -- --profile # also CPU-profile the API during the synthetic phases
 *   npm run bench -- --only=llama,open-streams
 *   npm run bench -- --only=embeddings           # embeddings/s: node-llama-cpp alone vs the service
 *   npm run bench -- --only=llama --model-path /models/x.gguf --gpu cuda   # your model, your GPU
 *   npm run bench -- --only=llama --model-path models/llama-50m-f16.gguf --llama-levels=1,8 --max-tokens=64
 *
 * A model of a real shape comes from `npx tsx tools/make-tiny-model.ts --shape llama-50m` (or qwen-0.5b,
 * qwen-1.5b; `--type q8_0`); its answers always run to max_tokens. `--llama-levels`,
 * `--max-tokens`, `--sequences`, `--threads`, `--repeats`, `--repeat-up-to` and `--engine-cpus`
 * set the llama phase's plan (bench/service/llama-overrides.ts).
 *
 * `--model-path` (or MODEL_PATH) is the GGUF the llama phase runs, the tiny model by default;
 * `--gpu` (or GPU) the llama.cpp backend of both sides, as the worker's GPU variable takes it
 * (auto, cuda, vulkan, metal, false), `false` (the CPU) by default.
 *
 * Needs `npm run build` and `npm run model` first. Writes bench/results/service-benchmark.json
 * and .svg (`-quick` / `-partial` suffixes for the other modes, and the model's name and backend
 * when they are not the defaults); raw logs and CPU profiles go to test-artifacts/bench/, outside
 * the repository.
 */
import { execSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { basename, extname, isAbsolute, join, relative, resolve } from 'node:path';
import { API_ENTRY, REPO_ROOT, WORKER_ENTRY } from '../../tools/local-stack/services';
import { hasRedisServerBinary, REDIS_INSTALL_HINT } from '../../tools/local-stack/redis-server';
import { llamaEngine, llamaLevelPlan, parseOptions, PHASES, streamPlan } from './bench-options';
import { takeLlamaOverrides } from './llama-overrides';
import { llamaServerBinary } from '@app/worker/engine';
import { offEngineCpus } from '../common/off-engine-cpus';
import { GPU_SETTINGS } from '../common/service-stack';
import { stopEverythingOnSignals } from '../common/cleanup';
import type { BenchOptions, PhaseName, RelayPlan, SyntheticPlan } from './bench-options';
import type { EngineSpec, GpuSetting } from '../common/driver-protocol';
import { runComparison } from './phases/comparison';
import { runEmbeddings } from './phases/embeddings';
import type { ComparisonLevelPlan } from './phases/comparison';
import { runNonStream } from './phases/non-stream';
import { runOpenStreams } from './phases/open-streams';
import { evaluateBars } from './report/bars';
import { consoleReport } from './report/console-report';
import { renderChart } from './report/svg-chart';
import type { BenchResults, ComparisonLevel, ProfileSummary } from './results-model';

const TINY_MODEL_PATH = resolve(REPO_ROOT, 'models/tiny-chat.gguf');
const RESULTS_DIR = resolve(REPO_ROOT, 'bench/results');
/** More than any level opens: every synthetic job gets a slot at once, as with an engine that keeps up. */
const SYNTHETIC_SLOTS = 20_000;

/** Sources under apps/ and libs/ whose compiled file in dist/ is missing or older: the build is stale. */
function staleSources(): string[] {
  const stale: string[] = [];
  // The GPU kit (npm run gpu:kit) carries the bundled build only: nothing to compare with.
  if (!existsSync(resolve(REPO_ROOT, 'apps'))) return stale;
  const visit = (directory: string, outputs: (relative: string) => string[]): void => {
    for (const entry of readdirSync(directory, { withFileTypes: true })) {
      const path = join(directory, entry.name);
      if (entry.isDirectory()) visit(path, outputs);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts')) {
        const relative = path.slice(REPO_ROOT.length + 1).replace(/\.ts$/, '.js');
        const sourceTime = statSync(path).mtimeMs;
        if (outputs(relative).some((output) => !existsSync(output) || statSync(output).mtimeMs < sourceTime)) stale.push(relative);
      }
    }
  };
  for (const app of ['api', 'worker']) visit(resolve(REPO_ROOT, 'apps', app, 'src'), (relative) => [resolve(REPO_ROOT, 'dist/apps', app, relative)]);
  visit(resolve(REPO_ROOT, 'libs'), (relative) => ['api', 'worker'].map((app) => resolve(REPO_ROOT, 'dist/apps', app, relative)));
  return stale;
}

/** Whether a command is on the PATH. */
function onPath(command: string): boolean {
  try {
    execSync(`command -v ${command}`, { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** The model and backend the llama phase runs: `--model-path` and `--gpu` (or MODEL_PATH and GPU), the tiny model on the CPU by default. */
interface LlamaTarget {
  modelPath: string;
  gpu: GpuSetting;
}

/** Takes `--model-path` and `--gpu` (`--name value` or `--name=value`) out of `argv`; the rest is for parseOptions. */
function takeLlamaTarget(argv: string[]): { target: LlamaTarget; rest: string[] } {
  const given = new Map<string, string>();
  const rest: string[] = [];
  for (let index = 0; index < argv.length; index += 1) {
    const arg = argv[index] ?? '';
    const [name = '', inline] = arg.split(/=(.*)/s);
    if (name !== '--model-path' && name !== '--gpu') {
      rest.push(arg);
      continue;
    }
    const value = inline ?? argv[(index += 1)];
    if (!value) throw new Error(`${name} needs a value`);
    given.set(name, value);
  }
  const gpu = given.get('--gpu') ?? process.env.GPU ?? 'false';
  if (!GPU_SETTINGS.includes(gpu as GpuSetting)) throw new Error(`--gpu ${gpu}: use one of ${GPU_SETTINGS.join(', ')}`);
  const modelPath = resolve(given.get('--model-path') ?? process.env.MODEL_PATH ?? TINY_MODEL_PATH);
  return { target: { modelPath, gpu: gpu as GpuSetting }, rest };
}

/** What the results files are called after, beyond the mode: the model and backend when they are not the defaults. */
/** `path` relative to the repository when it lies inside it, else as given (an operator's own model). */
function displayPath(path: string): string {
  const inside = relative(REPO_ROOT, path);
  return inside.startsWith('..') || isAbsolute(inside) ? path : inside;
}

function targetSuffix({ modelPath, gpu }: LlamaTarget): string {
  if (modelPath === TINY_MODEL_PATH && gpu === 'false') return '';
  const model = basename(modelPath, extname(modelPath)).replace(/[^\w.-]+/g, '_');
  return `-${model}-${gpu === 'false' ? 'cpu' : gpu}`;
}

function preflight(target: LlamaTarget, phases: ReadonlySet<PhaseName>): void {
  const synthetic = resolve(REPO_ROOT, 'dist/apps/worker/apps/worker/src/engine/synthetic.engine.js');
  const needsSynthetic = [...phases].some((phase) => phase !== 'llama');
  for (const [path, fix] of [[API_ENTRY, 'npm run build'], [WORKER_ENTRY, 'npm run build'], ...(needsSynthetic ? [[synthetic, 'npm run build']] : [])]) {
    if (!existsSync(path)) throw new Error(`${path} is missing: run \`${fix}\` first`);
  }
  if (!existsSync(target.modelPath)) {
    throw new Error(
      target.modelPath === TINY_MODEL_PATH ? `${target.modelPath} is missing: run \`npm run model\` first` : `--model-path ${target.modelPath}: no such file`,
    );
  }
  if (!hasRedisServerBinary()) throw new Error(REDIS_INSTALL_HINT);
  if (typeof WebSocket === 'undefined') throw new Error('no global WebSocket: run through `npm run bench` (Node 20 needs --experimental-websocket)');
  const stale = staleSources();
  if (stale.length > 0) {
    console.warn(
      `warning: ${stale.length} source files changed since the last build (${stale.slice(0, 3).join(', ')}…); the benchmark runs dist/ as built: \`npm run build\` to refresh`,
    );
  }
}

function openFilesLimit(): number {
  try {
    return Number(execSync('ulimit -n', { shell: '/bin/sh', encoding: 'utf8' }).trim()) || 1024;
  } catch {
    return 1024;
  }
}

function syntheticLevels(plan: SyntheticPlan, profileAt: number | undefined): ComparisonLevelPlan[] {
  return plan.levels.map((concurrency) => ({
    plan: streamPlan(concurrency, Math.max(concurrency * plan.roundsPerClient, 20), plan.durationMs, plan.tokens),
    repeats: plan.repeats,
    profile: concurrency === profileAt,
  }));
}

const syntheticEngine = (tokens: number, tokenIntervalMs: number): EngineSpec => ({
  kind: 'synthetic',
  tokens,
  tokenIntervalMs,
  slots: SYNTHETIC_SLOTS,
  contextSize: 4096,
});

/** Relay levels that share a token interval share one service stack (the interval is the worker's setting). */
async function runRelay(
  plan: RelayPlan,
  fits: (streams: number) => boolean,
  profile: boolean,
  apiProcesses: number,
): Promise<{ levels: ComparisonLevel[]; profiles: ProfileSummary[] }> {
  const levels = plan.levels.filter((level) => fits(level.streams));
  const busiest = levels.reduce<number | undefined>((most, level) => Math.max(most ?? 0, level.streams), undefined);
  const outcome: { levels: ComparisonLevel[]; profiles: ProfileSummary[] } = { levels: [], profiles: [] };
  for (const interval of [...new Set(levels.map((level) => level.tokenIntervalMs))]) {
    const tokens = Math.round((plan.streamSeconds * 1000) / interval);
    const group = levels
      .filter((level) => level.tokenIntervalMs === interval)
      .map(({ streams }): ComparisonLevelPlan => ({
        plan: streamPlan(streams, streams * plan.roundsPerClient, plan.durationMs, tokens),
        repeats: plan.repeats,
        profile: profile && streams === busiest,
      }));
    console.log(`  ${tokens} tokens ${interval} ms apart per stream`);
    const result = await runComparison(`relay-${interval}ms`, syntheticEngine(tokens, interval), group, apiProcesses);
    outcome.levels.push(...result.levels.map((level) => ({ ...level, tokenIntervalMs: interval })));
    outcome.profiles.push(...result.profiles);
  }
  return outcome;
}

async function runPhases(options: BenchOptions, target: LlamaTarget, limit: number): Promise<Omit<BenchResults, 'bars' | 'durationSeconds'>> {
  const cpuList = cpus();
  const results: Omit<BenchResults, 'bars' | 'durationSeconds'> = {
    generatedAt: new Date().toISOString(),
    mode: options.mode,
    machine: {
      cpus: cpuList.length,
      cpuModel: cpuList[0]?.model.trim() ?? 'unknown',
      node: process.version,
      loadAverageAtStart: loadavg().map((value) => Math.round(value * 100) / 100),
      openFilesLimit: limit,
    },
    // A model inside the repository is recorded by its relative path: results do not name the machine's folders.
    settings: {
      llamaEngine: { ...target, modelPath: displayPath(target.modelPath) },
      llama: options.llama,
      synthetic: options.synthetic,
      relay: options.relay,
      openStreams: options.openStreams,
      nonStream: options.nonStream,
      embeddings: options.embeddings,
      syntheticSlots: SYNTHETIC_SLOTS,
      apiProcesses: options.apiProcesses,
    },
    profiles: [],
  };
  const fitsFds = (concurrency: number): boolean => concurrency + 500 <= limit;

  if (options.phases.has('llama')) {
    console.log(`\n» llama.cpp: engine alone vs service (${target.modelPath}, GPU=${target.gpu})`);
    const { llama } = options;
    const engine = llamaEngine(llama, target.modelPath, target.gpu);
    const levels = llama.levels
      .filter((level) => fitsFds(level.concurrency))
      .map(({ concurrency, requests }): ComparisonLevelPlan => {
        return { plan: llamaLevelPlan(llama, concurrency, requests), repeats: concurrency <= llama.repeatUpTo ? llama.repeats : 1, profile: false };
      });
    results.llama = (await offEngineCpus(llama.engineCpus, () => runComparison('llama', engine, levels, options.apiProcesses))).levels;
    const server = llamaServerBinary(process.env.LLAMA_SERVER_BIN ?? '');
    if (server === 'llama-server' && !onPath('llama-server'))
      console.log('\n» llama-server: not built (npm run llama-server:build) nor on the PATH: its columns are left out');
    else {
      console.log(`\n» llama.cpp's own server (${server}) alone vs the service on ENGINE=llama-server, then on ENGINE=llama`);
      const alone: EngineSpec = { ...engine, kind: 'llama-server' };
      const onServer = await offEngineCpus(llama.engineCpus, () => runComparison('llama-server', alone, levels, options.apiProcesses));
      const onLlama = await offEngineCpus(llama.engineCpus, () => runComparison('llama-vs-server', alone, levels, options.apiProcesses, engine));
      results.llamaServer = { service: onServer.levels, llamaEngine: onLlama.levels };
    }
  }
  if (options.phases.has('synthetic')) {
    console.log(`\n» synthetic engine (${options.synthetic.tokens} tokens, ${options.synthetic.tokenIntervalMs} ms apart): engine alone vs service`);
    const levels = syntheticLevels({ ...options.synthetic, levels: options.synthetic.levels.filter(fitsFds) }, options.profile ? 100 : undefined);
    const outcome = await runComparison(
      'synthetic',
      syntheticEngine(options.synthetic.tokens, options.synthetic.tokenIntervalMs),
      levels,
      options.apiProcesses,
    );
    results.synthetic = outcome.levels;
    results.profiles?.push(...outcome.profiles);
  }
  if (options.phases.has('relay')) {
    console.log('\n» relay: long synthetic streams, one token per delta event');
    const outcome = await runRelay(options.relay, fitsFds, options.profile, options.apiProcesses);
    results.relay = outcome.levels;
    results.profiles?.push(...outcome.profiles);
  }
  if (options.phases.has('open-streams')) {
    console.log('\n» open streams: memory per stream and Redis connections of one API process');
    results.openStreams = await runOpenStreams(options.openStreams, limit);
  }
  if (options.phases.has('non-stream')) {
    console.log('\n» non-stream requests, synthetic engine at zero delay');
    const outcome = await runNonStream(options.nonStream, options.profile, options.apiProcesses);
    results.nonStream = outcome.levels;
    results.profiles?.push(...outcome.profiles);
  }
  if (options.phases.has('embeddings')) {
    console.log(`\n» embeddings: node-llama-cpp alone vs service, requests of ${options.embeddings.inputsPerRequest} inputs`);
    results.embeddings = await runEmbeddings(options.embeddings);
  }
  if (results.profiles?.length === 0) delete results.profiles;
  return results;
}

async function main(): Promise<void> {
  const { target, rest } = takeLlamaTarget(process.argv.slice(2));
  const overrides = takeLlamaOverrides(rest);
  const parsed = parseOptions(overrides.rest);
  const options: BenchOptions = { ...parsed, llama: overrides.apply(parsed.llama) };
  preflight(target, options.phases);
  stopEverythingOnSignals();
  const limit = openFilesLimit();
  console.log(
    `bench: ${options.mode} run, phases ${[...options.phases].join(', ')}, API_PROCESSES ${options.apiProcesses}; ulimit -n ${limit}; ${cpus().length} CPUs, load ${loadavg()
      .map((value) => value.toFixed(2))
      .join(' ')}`,
  );
  const startedAt = performance.now();
  const measured = await runPhases(options, target, limit);
  const results: BenchResults = { ...measured, bars: evaluateBars(measured), durationSeconds: Math.round((performance.now() - startedAt) / 1000) };

  const partial = options.phases.size < PHASES.length;
  const name = `service-benchmark${targetSuffix(target)}${options.mode === 'quick' ? '-quick' : ''}${partial ? '-partial' : ''}`;
  mkdirSync(RESULTS_DIR, { recursive: true });
  writeFileSync(resolve(RESULTS_DIR, `${name}.json`), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(resolve(RESULTS_DIR, `${name}.svg`), renderChart(results));
  console.log(consoleReport(results));
  console.log(`\nWrote bench/results/${name}.json and .svg in ${results.durationSeconds} s.`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
    process.exit(1);
  },
);
