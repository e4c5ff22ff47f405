import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** node-llama-cpp as installed: it carries the llama.cpp release it pins as a git bundle, with its patch. */
export const NODE_LLAMA_CPP = resolve(__dirname, '..', '..', 'node_modules/node-llama-cpp');
const BUNDLE = join(NODE_LLAMA_CPP, 'llama/gitRelease.bundle');

/** The llama.cpp commit node-llama-cpp's bundle holds: what a build from it is keyed by. */
export function bundledLlamaCppCommit(): string {
  const heads = execFileSync('git', ['bundle', 'list-heads', BUNDLE], { encoding: 'utf8' });
  const commit = /^([0-9a-f]{40}) /m.exec(heads)?.[1];
  if (commit === undefined) throw new Error(`no commit in ${BUNDLE}`);
  return commit;
}

/**
 * Clones the llama.cpp release node-llama-cpp pins into `target`, from its git bundle, with its
 * patch applied as node-llama-cpp's `source download` does: the code its addon is built from.
 */
export function cloneBundledLlamaCpp(target: string): void {
  const git = (args: string[], cwd?: string): void => void execFileSync('git', args, { cwd, stdio: ['ignore', 'ignore', 'inherit'] });
  git(['-c', 'advice.detachedHead=false', 'clone', '--quiet', BUNDLE, target]);
  const loader = readFileSync(join(target, 'src/llama-model-loader.cpp'), 'utf8');
  if (!loader.includes('n_tensors = gguf_get_n_tensors(metadata);')) git(['apply', join(NODE_LLAMA_CPP, 'llama/patches/PR-22566.diff')], target);
}
