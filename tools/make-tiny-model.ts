/**
 * Generates a tiny, deterministic GGUF chat model for tests and `npm start`.
 *
 *   npx tsx tools/make-tiny-model.ts [--name tiny-chat] [--corpus alice|fables] [--out models/tiny-chat.gguf] [--thinking] [--parallel-calls]
 *
 * `--thinking` gives it a reasoning model's chat template (tiny-model/thinking-template.ts).
 * `--parallel-calls` lets a tool call be followed by another; without it the turn ends after one.
 * `--fim` adds fill-in-the-middle tokens, for `suffix` in legacy completions.
 *
 * The same arguments always give the same bytes; an existing identical file is
 * left untouched so its mtime (and anything keyed on it) does not change.
 *
 * `--shape llama-50m|qwen-0.5b|qwen-1.5b [--type f16|q8_0] [--seed N] [--pooling mean|cls|last] [--out …]` makes instead a
 * model of a real shape with seeded random weights, for benchmarks (tiny-model/model-shapes.ts).
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { buildBigramModel } from './tiny-model/bigram-model';
import type { CorpusName } from './tiny-model/corpus';
import { isCorpusName } from './tiny-model/corpus';
import { writeGguf } from './tiny-model/gguf-writer';
import { withThinkingTemplate } from './tiny-model/thinking-template';
import { runShapeCli, SHAPE_CLI_OPTIONS } from './tiny-model/shape-cli';

export interface MakeTinyModelOptions {
  readonly name: string;
  readonly corpus: CorpusName;
  readonly out: string;
  /** A reasoning model's template: answers open with a thought segment. */
  readonly thinking?: boolean;
  /** A tool call may be followed by another (tiny-model/tool-markup.ts). */
  readonly parallelCalls?: boolean;
  /** Fill-in-the-middle tokens (tiny-model/bigram-model.ts, FIM_TOKENS). */
  readonly fim?: boolean;
}

export interface MakeTinyModelResult {
  readonly path: string;
  readonly bytes: number;
  /** False when an identical file was already there. */
  readonly written: boolean;
}

export function makeTinyModel(options: MakeTinyModelOptions): MakeTinyModelResult {
  const model = buildBigramModel({ name: options.name, corpus: options.corpus, parallelCalls: options.parallelCalls, fim: options.fim });
  const data = writeGguf({ metadata: options.thinking ? withThinkingTemplate(model.metadata) : model.metadata, tensors: model.tensors });
  const path = resolve(options.out);
  if (existsSync(path) && readFileSync(path).equals(data)) {
    return { path, bytes: data.length, written: false };
  }
  mkdirSync(dirname(path), { recursive: true });
  // Temp file + rename: a concurrent reader (e.g. a parallel test run) never sees a half-written model.
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, data);
  renameSync(tmp, path);
  return { path, bytes: data.length, written: true };
}

function parseCli(argv: string[]): MakeTinyModelOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      name: { type: 'string', default: 'tiny-chat' },
      corpus: { type: 'string' },
      out: { type: 'string' },
      thinking: { type: 'boolean', default: false },
      'parallel-calls': { type: 'boolean', default: false },
      fim: { type: 'boolean', default: false },
      ...SHAPE_CLI_OPTIONS,
    },
    strict: true,
  });
  const name = values.name ?? 'tiny-chat';
  // Without --corpus, a name mentioning fables picks that corpus.
  const corpus = values.corpus ?? (name.includes('fables') ? 'fables' : 'alice');
  if (!isCorpusName(corpus)) throw new Error(`unknown --corpus "${corpus}" (expected alice or fables)`);
  return { name, corpus, out: values.out ?? `models/${name}.gguf`, thinking: values.thinking, parallelCalls: values['parallel-calls'], fim: values.fim };
}

function main(): void {
  if (runShapeCli(process.argv.slice(2))) return;
  const started = performance.now();
  const options = parseCli(process.argv.slice(2));
  const result = makeTinyModel(options);
  const ms = (performance.now() - started).toFixed(0);
  const size = `${result.bytes} bytes (${(result.bytes / 1024 / 1024).toFixed(2)} MiB)`;
  const status = result.written ? 'wrote' : 'up to date, not rewritten:';
  console.log(`${status} ${result.path} — ${size}, corpus ${options.corpus}, ${ms} ms`);
}

if (require.main === module) {
  try {
    main();
  } catch (err) {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  }
}
