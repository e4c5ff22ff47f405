import { writeFileSync } from 'node:fs';
import { basename } from 'node:path';

/** Linux keeps at most 15 bytes of a thread's name. */
const MAX_THREAD_NAME = 15;

/**
 * Gives the process back its executable's name. Node 24 names its main thread `MainThread`, and on
 * Linux the main thread's name is the process's: `ps`, `pgrep node` and process exporters would
 * see `MainThread`. Other threads keep the names Node gives them. A no-op off Linux.
 */
export function keepProcessName(name = basename(process.execPath)): void {
  if (process.platform !== 'linux') return;
  try {
    writeFileSync('/proc/self/comm', name.slice(0, MAX_THREAD_NAME));
  } catch {
    // A kernel without a writable comm keeps Node's name: nothing to fix then.
  }
}
