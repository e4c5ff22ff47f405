import { readdirSync, readFileSync } from 'node:fs';

/**
 * The fields of /proc/<pid>/stat after the command name (which is in parentheses and may hold
 * spaces): [0] state, [1] parent, [11] user and [12] system clock ticks. Undefined once it is gone
 * (and off Linux).
 */
export function procStatFields(pid: number | string): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** State and parent of a process; undefined once it is gone. */
function statOf(pid: number | string): { state: string; parent: number } | undefined {
  const fields = procStatFields(pid);
  return fields && { state: fields[0], parent: Number(fields[1]) };
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
