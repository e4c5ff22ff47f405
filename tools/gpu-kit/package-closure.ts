import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Where Node would find `name` from `fromDir`: the nearest node_modules/<name> up the tree. */
function packageDir(name: string, fromDir: string): string | undefined {
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dirname(dir) === dir) return undefined;
  }
}

/**
 * The folders of `names` and of every package their `dependencies` reach, as installed under
 * `root` (nested copies included). Optional dependencies are left out: they are the prebuilt
 * binaries a kit does not carry. A dependency that is not installed is an error.
 */
export function productionClosure(root: string, names: readonly string[]): string[] {
  const seen = new Set<string>();
  const visit = (name: string, fromDir: string): void => {
    const dir = packageDir(name, fromDir);
    if (dir === undefined) throw new Error(`${name} (needed from ${fromDir}) is not installed`);
    if (seen.has(dir)) return;
    seen.add(dir);
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
    for (const dependency of Object.keys(manifest.dependencies ?? {})) visit(dependency, dir);
  };
  for (const name of names) visit(name, root);
  return [...seen];
}
