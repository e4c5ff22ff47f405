import { execFileSync } from 'node:child_process';
import { existsSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { relative, resolve } from 'node:path';
import { API_ENTRY, REPO_ROOT, WORKER_ENTRY } from '../../tools/local-stack/services';

const git = (...args: string[]): string => execFileSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8' }).trim();

/**
 * A checkout of `revision`, built, beside this one (a git worktree in the system's temporary
 * folder, outside the repository, so that neither the compiler nor the tests see it). It shares
 * this checkout's node_modules (a revision with other dependencies runs with these) and models;
 * built once per commit and reused.
 */
export function baseBuild(revision: string): { root: string; commit: string } {
  const commit = git('rev-parse', '--verify', `${revision}^{commit}`);
  const root = resolve(tmpdir(), `queued-chat-base-${commit.slice(0, 12)}`);
  const built = [API_ENTRY, WORKER_ENTRY].every((entry) => existsSync(resolve(root, relative(REPO_ROOT, entry))));
  if (built) return { root, commit };
  rmSync(root, { recursive: true, force: true });
  git('worktree', 'prune');
  git('worktree', 'add', '--detach', '--force', root, commit);
  for (const shared of ['node_modules', 'models']) symlinkSync(resolve(REPO_ROOT, shared), resolve(root, shared));
  console.log(`building ${revision} (${commit.slice(0, 12)}) in ${root}`);
  execFileSync('npm', ['run', 'build'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  return { root, commit };
}
