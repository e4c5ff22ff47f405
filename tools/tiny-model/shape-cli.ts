import { parseArgs } from 'node:util';
import { isPoolingName, isShapeName, makeShapeModel, MODEL_SHAPES, POOLING_TYPES } from './model-shapes';

/** make-tiny-model.ts's options for a model of a real shape (see model-shapes.ts). */
export const SHAPE_CLI_OPTIONS = {
  shape: { type: 'string' },
  type: { type: 'string' },
  seed: { type: 'string' },
  pooling: { type: 'string' },
} as const;

/** Makes the model `--shape` names and returns true; false (nothing done) without `--shape`. */
export function runShapeCli(argv: string[]): boolean {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...SHAPE_CLI_OPTIONS,
      name: { type: 'string' },
      corpus: { type: 'string' },
      out: { type: 'string' },
      thinking: { type: 'boolean' },
      'parallel-calls': { type: 'boolean' },
      fim: { type: 'boolean' },
    },
    strict: true,
  });
  if (values.shape === undefined) {
    if (values.type !== undefined || values.seed !== undefined || values.pooling !== undefined) throw new Error('--type, --seed and --pooling go with --shape');
    return false;
  }
  const shape = values.shape;
  if (!isShapeName(shape)) throw new Error(`unknown --shape "${shape}" (expected ${Object.keys(MODEL_SHAPES).join(', ')})`);
  const type = values.type ?? 'f16';
  if (type !== 'f16' && type !== 'q8_0') throw new Error(`unknown --type "${type}" (expected f16 or q8_0)`);
  const seed = Number(values.seed ?? '1');
  if (!Number.isInteger(seed) || seed < 0) throw new Error(`--seed ${values.seed}: a whole number is needed`);
  if (
    values.name !== undefined ||
    values.corpus !== undefined ||
    values.thinking !== undefined ||
    values['parallel-calls'] !== undefined ||
    values.fim !== undefined
  )
    throw new Error('--name, --corpus, --thinking, --parallel-calls and --fim are for the tiny models, not --shape');
  const pooling = values.pooling;
  if (pooling !== undefined && !isPoolingName(pooling)) throw new Error(`unknown --pooling "${pooling}" (expected ${Object.keys(POOLING_TYPES).join(', ')})`);
  const started = performance.now();
  const result = makeShapeModel({ shape, type, seed, pooling, out: values.out ?? `models/${shape}-${type}${pooling ? `-${pooling}` : ''}.gguf` });
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(
    `wrote ${result.path}: ${MODEL_SHAPES[shape].description}${pooling === 'rank' ? ' reranker' : pooling ? ` embedding model (${pooling} pooling)` : ''}, ${type}, ${(result.parameters / 1e6).toFixed(1)}M parameters, ${(result.bytes / 2 ** 20).toFixed(1)} MiB, seed ${seed}, ${seconds} s`,
  );
  return true;
}
