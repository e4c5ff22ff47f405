/**
 * `npm run llama-server:build [-- --cuda-archs=90]`: builds llama.cpp's own server (and
 * llama-batched-bench) from the llama.cpp source node-llama-cpp ships, so both engines run the
 * same code. The build lives outside the clone, keyed by that llama.cpp commit and the variant
 * (`$LLAMA_SERVER_CACHE`, by default ~/.cache/queued-inference/llama-server): a machine that built
 * it once skips the build. `.llama-server` (git-ignored) then points at it, which is where the
 * worker looks for `llama-server` when LLAMA_SERVER_BIN is not set.
 *
 * CPU: GGML_NATIVE (this machine's instructions), or `--portable` for an image that runs elsewhere.
 * CUDA: `--cuda-archs` as CMake takes them (90 for H100/H200), with nvcc and cuBLAS on the host.
 * About 14 minutes on 2 busy cores with one job.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { cpus, homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { bundledLlamaCppCommit, cloneBundledLlamaCpp } from './llama-cpp-source';

const REPO_ROOT = resolve(__dirname, '..', '..');
const LINK = join(REPO_ROOT, '.llama-server');
const TARGETS = ['llama-server', 'llama-batched-bench'];

const { values } = parseArgs({ options: { 'cuda-archs': { type: 'string' }, jobs: { type: 'string' }, portable: { type: 'boolean' } } });
const cudaArchs = values['cuda-archs'];
// Portable: for an image that runs on other CPUs than the build host's (no -march=native).
const native = !cudaArchs && values.portable !== true;
const variant = cudaArchs ? `cuda-${cudaArchs.replace(/[^0-9a-z]+/gi, '_')}` : native ? 'cpu-native' : 'cpu-portable';
const cache = process.env.LLAMA_SERVER_CACHE || join(homedir(), '.cache/queued-inference/llama-server');
const built = join(cache, `${bundledLlamaCppCommit().slice(0, 12)}-${variant}`);

if (existsSync(join(built, 'bin/llama-server'))) console.log(`llama-server: already built in ${built}`);
else {
  const started = Date.now();
  const scratch = mkdtempSync(join(tmpdir(), 'llama-server-build-'));
  try {
    const source = join(scratch, 'llama.cpp');
    cloneBundledLlamaCpp(source);
    const build = join(scratch, 'build');
    const cmake = (args: string[]): void => void execFileSync('cmake', args, { stdio: 'inherit' });
    cmake([
      '-S',
      source,
      '-B',
      build,
      '-DCMAKE_BUILD_TYPE=Release',
      '-DBUILD_SHARED_LIBS=OFF',
      '-DLLAMA_CURL=OFF',
      '-DLLAMA_BUILD_TESTS=OFF',
      '-DLLAMA_BUILD_EXAMPLES=OFF',
      '-DLLAMA_BUILD_SERVER=ON',
      `-DGGML_NATIVE=${native ? 'ON' : 'OFF'}`,
      ...(cudaArchs ? ['-DGGML_CUDA=ON', `-DCMAKE_CUDA_ARCHITECTURES=${cudaArchs}`] : []),
    ]);
    cmake(['--build', build, '--target', ...TARGETS, '--parallel', values.jobs ?? String(cpus().length)]);
    mkdirSync(cache, { recursive: true });
    // Whole or not at all: a build cut short leaves nothing that looks built.
    const staged = `${built}.partial-${process.pid}`;
    cpSync(join(build, 'bin'), join(staged, 'bin'), { recursive: true });
    rmSync(built, { recursive: true, force: true });
    renameSync(staged, built);
    console.log(`llama-server: built in ${Math.round((Date.now() - started) / 1000)} s into ${built}`);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

if (existsSync(LINK) || isLink(LINK)) rmSync(LINK, { force: true, recursive: false });
symlinkSync(built, LINK);
console.log(`llama-server: ${join(LINK, 'bin/llama-server')}`);

function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}
