import { readFileSync, readdirSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { REPO_ROOT } from './deploy-files';

/**
 * A fresh clone is all the suite needs: no source, test or tool reads its data from beside the
 * repository (the OpenAI schema, once read from a sibling checkout, is vendored in
 * test/reference/). Any code that must reach outside does so through a variable it is given
 * (REDIS_URL, a model path), never through a path written into it.
 */
const SCANNED = ['apps', 'libs', 'test', 'tools', 'bench'];
const EXTENSIONS = ['.ts', '.js', '.mjs', '.json'];
/** The reading material beside every checkout; the path is built so that this file does not hold what it looks for. */
const SIBLING_FOLDER = 'shared';
const SIBLING = join('..', SIBLING_FOLDER);
/** The machines' own checkout folders: where a path written into the code would have come from. */
const MACHINE_PATH = new RegExp(`["'\`]/(?:${['work', 'home', 'Users', 'mnt'].join('|')})/`);
/** A quoted relative path that climbs: './../x', '../../y', '..'. */
const CLIMBING = /["'`]((?:\.\/)?(?:\.\.(?:\/|(?=["'`])))+[^"'`\s]*)["'`]/g;

/** Files under `dir` with one of the scanned extensions; dependencies and build output are not the project's. */
function sourcesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' || entry.name === 'dist' ? [] : sourcesUnder(path);
    return entry.isFile() && EXTENSIONS.some((extension) => entry.name.endsWith(extension)) ? [path] : [];
  });
}

/** What in one file's text reads outside the repository, as `file:line: why`. */
function outsideReferences(file: string, text: string): string[] {
  const name = relative(REPO_ROOT, file);
  const outside = (path: string): boolean => {
    const rel = relative(REPO_ROOT, resolve(dirname(file), path));
    return rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel);
  };
  return text.split('\n').flatMap((line, index) => {
    const where = `${name}:${index + 1}`;
    const found: string[] = [];
    if (line.includes(SIBLING)) found.push(`${where}: refers to ${SIBLING}`);
    if (MACHINE_PATH.test(line)) found.push(`${where}: an absolute path on a particular machine`);
    for (const [, path] of line.matchAll(CLIMBING)) if (outside(path)) found.push(`${where}: ${path} leads out of the repository`);
    return found;
  });
}

describe('the repository is self-contained', () => {
  const files = SCANNED.flatMap((dir) => sourcesUnder(resolve(REPO_ROOT, dir)));

  it('no file under apps, libs, test, tools or bench reads test data from outside the repository', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(files).toContain(__filename);
    expect(files.flatMap((file) => outsideReferences(file, readFileSync(file, 'utf8')))).toEqual([]);
  });

  it('the check is not vacuous: a sibling checkout, a machine path and a path that climbs out are caught', () => {
    // Written as this file's own scan would flag them, but built so that it does not.
    const machinePath = ['', 'work', 'shared', 'reference', 'openai.json'].join('/');
    const climbing = `${'../'.repeat(3)}fixtures/a.json`;
    const here = resolve(REPO_ROOT, 'test/support/example.ts');
    expect(outsideReferences(here, `const schema = resolve(REPO_ROOT, '${SIBLING}/reference/openai.json');`)).toHaveLength(1);
    expect(outsideReferences(here, `readFileSync('${machinePath}')`)).toHaveLength(1);
    expect(outsideReferences(here, `readFileSync(resolve(__dirname, '${climbing}'))`)).toHaveLength(1);
    expect(outsideReferences(here, "resolve(__dirname, '../..')")).toHaveLength(0);
    expect(outsideReferences(here, "import { waitFor } from '../support/service-stack';")).toHaveLength(0);
  });
});
