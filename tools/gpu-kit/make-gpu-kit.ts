/**
 * `npm run gpu:kit`: writes gpu-kit/ (git-ignored, at most 60 MiB), everything a bare Linux x86-64
 * GPU host needs to prove the CUDA worker and measure it, with nothing else installed there but
 * a compiler, CMake, the CUDA toolkit and a cuBLAS:
 *
 *   gpu-kit/run.sh        the one entry point (tools/gpu-kit/run.sh)
 *   gpu-kit/kit.tar.xz    node/   Node 24 and npm (node-llama-cpp compiles through `npm run`)
 *                         app/    both apps and the benchmark bundled by esbuild from what
 *                                 `npm run build` compiled, the model maker, and node-llama-cpp
 *                                 with its production dependencies and the llama.cpp source it
 *                                 pins (from its git bundle, its patch applied, unused backends left out)
 *                         redis/  this machine's redis-server and the shared libraries it needs
 *
 * Needs `npm run build` first (the npm script runs it), git, xz and ldd.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { build } from 'esbuild';
import { cloneBundledLlamaCpp, NODE_LLAMA_CPP } from '../llama-server/llama-cpp-source';
import { productionClosure } from './package-closure';

const REPO_ROOT = resolve(__dirname, '..', '..');
const KIT_DIR = resolve(REPO_ROOT, 'gpu-kit');
const KIT_LIMIT_BYTES = 60 * 2 ** 20;
const WORKER_SRC = 'dist/apps/worker/apps/worker/src';
const API_SRC = 'dist/apps/api/apps/api/src';

/** llama.cpp's ggml backends the kit builds (CPU and CUDA) and what every build needs; the others stay out. */
const UNUSED_GGML_BACKENDS = ['ggml-blas', 'ggml-cann', 'ggml-et', 'ggml-hexagon', 'ggml-hip', 'ggml-metal', 'ggml-musa', 'ggml-opencl', 'ggml-openvino', 'ggml-sycl', 'ggml-virtgpu', 'ggml-vulkan', 'ggml-webgpu', 'ggml-zdnn', 'ggml-zendnn'];
/** The parts of llama.cpp's tree node-llama-cpp's CMake file reaches (llama, ggml, common and what they vendor). */
const LLAMA_CPP_PARTS = ['CMakeLists.txt', 'LICENSE', 'cmake', 'common', 'ggml', 'include', 'licenses', 'src', 'vendor'];
/** Libraries every glibc host has, of the same lineage as the host's own compiler: not carried. */
const HOST_LIBRARIES = /^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s)\.so/;

function run(command: string, args: string[], cwd = REPO_ROOT): string {
  return execFileSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 * 2 ** 20 });
}

/** One esbuild bundle: the apps from their tsc output (which holds Nest's decorator metadata), the tools from TypeScript. */
async function bundle(entry: string, outfile: string): Promise<void> {
  await build({
    entryPoints: [resolve(REPO_ROOT, entry)],
    outfile,
    bundle: true,
    platform: 'node',
    target: 'node24',
    format: 'cjs',
    // Nest names providers and modules after their classes: names are kept, only whitespace and syntax shrink.
    keepNames: true,
    minifyWhitespace: true,
    minifySyntax: true,
    external: [...CARRIED_PACKAGES, ...OPTIONAL_PACKAGES],
    tsconfig: resolve(REPO_ROOT, 'tsconfig.json'),
    // ESM-minded packages (@nestjs/terminus) call createRequire(import.meta.url): in a CommonJS bundle, this file's URL.
    define: { 'import.meta.url': '__bundleFileUrl' },
    banner: { js: "const __bundleFileUrl = require('node:url').pathToFileURL(__filename).href;" },
    logLevel: 'error',
    legalComments: 'none',
  });
}

/**
 * Packages that find their own files on disk, so they stay packages beside the bundles:
 * node-llama-cpp (its binaries and llama.cpp source), the Swagger UI and Bull Board's UI (static assets).
 */
const CARRIED_PACKAGES = ['node-llama-cpp', 'swagger-ui-dist', '@bull-board/ui'];

/** Packages that Nest, BullMQ and others load only when installed (in try/catch): absent in the apps, so never bundled. */
const OPTIONAL_PACKAGES = [
  '@nestjs/microservices', '@nestjs/microservices/*', '@nestjs/websockets', '@nestjs/websockets/*', '@nestjs/platform-express',
  'msgpackr-extract', '@aws-sdk/signature-v4-crt', 'aws-crt',
];

/** Both apps and the benchmark, laid out as in the repository: each bundle's __dirname is where its code looks for its children. */
async function bundleApps(app: string): Promise<void> {
  // The worker's boot self-test child and the llama.cpp engine thread are separate entry points
  // that the worker finds beside its own file (join(__dirname, …)): beside the one bundle.
  await bundle(`${API_SRC}/main.js`, join(app, API_SRC, 'main.js'));
  await bundle(`${WORKER_SRC}/main.js`, join(app, WORKER_SRC, 'main.js'));
  await bundle(`${WORKER_SRC}/boot/self-test-child.js`, join(app, WORKER_SRC, 'self-test-child.js'));
  await bundle(`${WORKER_SRC}/engine/thread/llama-engine-thread.js`, join(app, WORKER_SRC, 'llama-engine-thread.js'));
  // The benchmark finds the repository two folders up (tools/local-stack) and its drivers beside itself.
  const kit = join(app, 'kit');
  await bundle('bench/service/run-bench.ts', join(kit, 'run-bench.js'));
  await bundle('bench/service/engine-driver.ts', join(kit, 'engine-driver.js'));
  await bundle('bench/service/http-load-driver.ts', join(kit, 'http-load-driver.js'));
  await bundle('bench/engine/decode-batches.ts', join(kit, 'decode-batches.js'));
  await bundle('tools/make-tiny-model.ts', join(kit, 'make-tiny-model.js'));
  await bundle('tools/gpu-kit/summarize-run.ts', join(kit, 'summarize-run.js'));
  writeFileSync(join(app, 'package.json'), `${JSON.stringify({ name: 'gpu-kit-app', private: true, description: 'written by npm run gpu:kit' }, null, 2)}\n`);
}

/** The carried packages and their production dependencies; node-llama-cpp without its prebuilt binaries (the kit compiles its own). */
function copyCarriedPackages(app: string): void {
  for (const dir of productionClosure(REPO_ROOT, CARRIED_PACKAGES)) {
    const target = join(app, relative(REPO_ROOT, dir));
    cpSync(dir, target, {
      recursive: true,
      filter: (source) => {
        const inside = relative(NODE_LLAMA_CPP, source);
        // The git bundle is 34 MB of history; the source is carried below. No local builds or clones of this machine.
        return !['llama/gitRelease.bundle', 'llama/localBuilds', 'llama/llama.cpp', 'node_modules/.bin'].includes(inside) && basename(source) !== '.bin';
      },
    });
  }
  // `npm run cmake-js-llama` (how node-llama-cpp compiles) finds cmake-js on node_modules/.bin.
  mkdirSync(join(app, 'node_modules/.bin'), { recursive: true });
  symlinkSync('../cmake-js/bin/cmake-js', join(app, 'node_modules/.bin/cmake-js'));
}

/**
 * The llama.cpp release node-llama-cpp pins, cloned from its git bundle with its patch applied as
 * `source download` does, cut to what the CPU and CUDA builds compile. An empty .git folder is
 * what node-llama-cpp's `source build` takes for "downloaded".
 */
function addLlamaCppSource(app: string, scratch: string): void {
  const clone = join(scratch, 'llama.cpp');
  cloneBundledLlamaCpp(clone);
  const target = join(app, 'node_modules/node-llama-cpp/llama/llama.cpp');
  for (const part of LLAMA_CPP_PARTS) cpSync(join(clone, part), join(target, part), { recursive: true });
  for (const backend of UNUSED_GGML_BACKENDS) rmSync(join(target, 'ggml/src', backend), { recursive: true, force: true });
  mkdirSync(join(target, '.git'));
}

/** Node and npm, as this machine runs them. */
function addNode(stage: string): void {
  const nodeBinary = realpathSync(process.execPath);
  const npmDir = dirname(dirname(realpathSync(run('sh', ['-c', 'command -v npm']).trim())));
  mkdirSync(join(stage, 'node/bin'), { recursive: true });
  copyFileSync(nodeBinary, join(stage, 'node/bin/node'));
  chmodSync(join(stage, 'node/bin/node'), 0o755);
  cpSync(npmDir, join(stage, 'node/lib/node_modules/npm'), { recursive: true });
  symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', join(stage, 'node/bin/npm'));
  symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', join(stage, 'node/bin/npx'));
}

/** redis-server with the shared libraries ldd names (but the host's glibc and C++ runtime), started by a wrapper that points the loader at them. */
function addRedis(stage: string): void {
  const binary = realpathSync(run('sh', ['-c', 'command -v redis-server']).trim());
  const dir = join(stage, 'redis');
  mkdirSync(join(dir, 'lib'), { recursive: true });
  copyFileSync(binary, join(dir, 'redis-server.bin'));
  for (const line of run('ldd', [binary]).split('\n')) {
    const match = /^\s*(\S+) => (\/\S+)/.exec(line);
    if (match && !HOST_LIBRARIES.test(match[1] ?? '')) copyFileSync(match[2] ?? '', join(dir, 'lib', match[1] ?? ''));
  }
  mkdirSync(join(dir, 'bin'));
  const wrapper = join(dir, 'bin/redis-server');
  writeFileSync(wrapper, '#!/bin/sh\nhere="$(cd "$(dirname "$0")/.." && pwd)"\nLD_LIBRARY_PATH="$here/lib" exec "$here/redis-server.bin" "$@"\n');
  chmodSync(wrapper, 0o755);
}

function folderBytes(path: string): number {
  const stats = statSync(path);
  if (!stats.isDirectory()) return stats.size;
  return readdirSync(path).reduce((sum, entry) => sum + folderBytes(join(path, entry)), 0);
}

async function main(): Promise<void> {
  const started = performance.now();
  for (const entry of [`${API_SRC}/main.js`, `${WORKER_SRC}/main.js`]) {
    if (!existsSync(resolve(REPO_ROOT, entry))) throw new Error(`${entry} is missing: run \`npm run build\` first`);
  }
  const scratch = mkdtempSync(join(tmpdir(), 'gpu-kit-'));
  try {
    const stage = join(scratch, 'stage');
    const app = join(stage, 'app');
    console.log('gpu:kit: bundling the apps and the benchmark');
    await bundleApps(app);
    console.log('gpu:kit: node-llama-cpp, the UIs\' assets, their dependencies and the llama.cpp source');
    copyCarriedPackages(app);
    addLlamaCppSource(app, scratch);
    console.log('gpu:kit: Node, npm and redis-server');
    addNode(stage);
    addRedis(stage);
    const raw = folderBytes(stage);
    rmSync(KIT_DIR, { recursive: true, force: true });
    mkdirSync(KIT_DIR);
    console.log(`gpu:kit: compressing ${(raw / 2 ** 20).toFixed(0)} MiB`);
    run('tar', ['-C', stage, '-cf', join(KIT_DIR, 'kit.tar.xz'), '--use-compress-program=xz -6 -T0', '--owner=0', '--group=0', 'node', 'app', 'redis']);
    copyFileSync(resolve(__dirname, 'run.sh'), join(KIT_DIR, 'run.sh'));
    chmodSync(join(KIT_DIR, 'run.sh'), 0o755);
    const bytes = folderBytes(KIT_DIR);
    const seconds = ((performance.now() - started) / 1000).toFixed(0);
    console.log(`gpu:kit: wrote ${relative(process.cwd(), KIT_DIR) || '.'}/ (run.sh, kit.tar.xz): ${(bytes / 2 ** 20).toFixed(1)} MiB in ${seconds} s`);
    if (bytes > KIT_LIMIT_BYTES) throw new Error(`the kit is ${(bytes / 2 ** 20).toFixed(1)} MiB, over its ${KIT_LIMIT_BYTES / 2 ** 20} MiB limit`);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
