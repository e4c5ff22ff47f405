/**
 * `npm run lock:stub` after any `npm install` that changes package-lock.json.
 *
 * The registry these machines reach serves only this platform's builds, so optional
 * dependencies such as @node-llama-cpp/mac-x64 cannot be resolved. `npm install` skips them
 * and writes a lockfile that `npm ci` then rejects as out of sync (npm/cli#9846). This adds
 * an `{ "optional": true }` entry at each place npm looks for one, which `npm ci` accepts and
 * skips like any optional package for another platform.
 *
 * Stubs written before are dropped first and npm locks what it can resolve now: a stub for a
 * package the registry has since begun to serve makes `npm ci` fail with "Invalid Version".
 */
import { execSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

interface ArboristNode {
  optional: boolean;
  version: string;
  errors: unknown[];
}
interface ArboristInstance {
  buildIdealTree(): Promise<void>;
  idealTree: { inventory: Map<string, ArboristNode> };
}
type ArboristClass = new (options: { path: string }) => ArboristInstance;

type Lockfile = { packages: Record<string, { version?: string; link?: boolean; optional?: boolean }> };
const readLock = (): Lockfile => JSON.parse(readFileSync('package-lock.json', 'utf8')) as Lockfile;
const writeLock = (lock: Lockfile): void => writeFileSync('package-lock.json', `${JSON.stringify(lock, null, 2)}\n`);

function dropStubs(): void {
  const lock = readLock();
  for (const [location, entry] of Object.entries(lock.packages)) if (location && !entry.version && !entry.link) delete lock.packages[location];
  writeLock(lock);
  execSync('npm install --package-lock-only --ignore-scripts --no-audit --no-fund', { stdio: 'inherit' });
}

async function main(): Promise<void> {
  dropStubs();
  // The npm that runs this script (npm_execpath) ships arborist; `npm root -g` may name another
  // prefix when node and npm come from different installs (a local Node 24 with the system npm).
  const npmDir = process.env.npm_execpath ? dirname(dirname(process.env.npm_execpath)) : join(execSync('npm root -g', { encoding: 'utf8' }).trim(), 'npm');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const Arborist = require(join(npmDir, 'node_modules/@npmcli/arborist')) as ArboristClass;
  const arborist = new Arborist({ path: process.cwd() });
  await arborist.buildIdealTree();

  const lock = readLock();
  const unavailable = [...arborist.idealTree.inventory.entries()].filter(
    ([location, node]) => node.optional && node.version === '' && node.errors.length > 0 && !lock.packages[location],
  );
  for (const [location] of unavailable) lock.packages[location] = { optional: true };
  writeLock(lock);
  console.log(`stubbed ${unavailable.length} unavailable optional dependencies`);
}

void main();
