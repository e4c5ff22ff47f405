import { readdirSync, readFileSync } from 'node:fs';

/** State and parent of a process from /proc (Linux); undefined once it is gone. */
function statOf(pid: number | string): { state: string; parent: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which is in parentheses and may hold spaces.
    const [state, parent] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state, parent: Number(parent) };
  } catch {
    return undefined;
  }
}

/** Whether `pid` runs (a zombie, ended but not yet reaped, does not). */
export function isAlive(pid: number): boolean {
  const stat = statOf(pid);
  return stat !== undefined && stat.state !== 'Z';
}

/** Live children of `pid`, in pid order (Linux /proc; none elsewhere). */
export function childPids(pid: number): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const children: number[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = statOf(entry);
    if (stat?.parent === pid && stat.state !== 'Z') children.push(Number(entry));
  }
  return children.sort((a, b) => a - b);
}
