import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/**
 * V8's helper threads, which collect garbage beside every JavaScript thread of the process. Never
 * the engine's: in the worker most of their work is the main thread's (one event a token to
 * Redis, BullMQ), and on the engine's CPU it took turns from llama.cpp.
 */
const V8_HELPERS = 'V8Worker';

/** The CPUs of a Linux CPU list (`1`, `2-15`, `0,4-7`), ascending, once each. */
export function parseCpuList(list: string): number[] {
  const cpus = new Set<number>();
  for (const range of list.split(',')) {
    const match = /^\s*(\d+)(?:-(\d+))?\s*$/.exec(range);
    const first = Number(match?.[1]);
    const last = Number(match?.[2] ?? match?.[1]);
    if (!match || first > last) throw new Error(`"${list}" is not a CPU list such as 1, 2-15 or 0,4-7`);
    for (let cpu = first; cpu <= last; cpu++) cpus.add(cpu);
  }
  return [...cpus].sort((a, b) => a - b);
}

export interface EngineCpus {
  /** A Linux CPU list: the CPUs llama.cpp's work runs on (ENGINE_CPUS). */
  cpus: string;
  /** llama.cpp's compute threads (ENGINE_THREADS): no more than the CPUs, as they spin-wait on each other. */
  threads: number;
  /**
   * Whether the process's main thread does other work (the worker's relays events to Redis and runs
   * BullMQ): it then goes on the process's other CPUs, as V8's helpers always do. Found by its id
   * (the process's), not its name, which the processes give back to the process (keepProcessName).
   */
  mainThreadElsewhere: boolean;
}

/** The CPUs a thread may run on, from its `/proc/<pid>/task/<tid>/status` (a process's: its main thread's). */
export function allowedCpus(status: string): number[] {
  return parseCpuList(/^Cpus_allowed_list:\s*(\S+)$/m.exec(status)?.[1] ?? '');
}

/** The CPUs of ENGINE_CPUS, refused when too few for `threads`: worth checking before a model loads. */
export function engineCpuList(cpus: string, threads: number): number[] {
  const engineCpus = parseCpuList(cpus);
  if (threads > engineCpus.length) {
    throw new Error(
      `ENGINE_THREADS=${threads} is more than the ${engineCpus.length} CPU(s) of ENGINE_CPUS=${cpus}: llama.cpp's threads would wait on each other`,
    );
  }
  return engineCpus;
}

/**
 * Keeps llama.cpp's work on CPUs of its own: every thread of the process goes on `cpus` but V8's
 * helpers and (when `mainThreadElsewhere`) the main thread, which go on the CPUs the process may use besides (when
 * there are any), so that their work never interrupts a token. The engine's threads are all the
 * others: Node's thread pool, where node-llama-cpp decodes and samples and from which llama.cpp's
 * extra compute threads start (inheriting its CPUs), and the thread running the engine's
 * JavaScript. Each token passes between these, and on a 2-vCPU VM a hand-over across CPUs cost
 * more than sharing one (llama-50m: 15 ms a token with the pool and the engine's thread on
 * different CPUs, 12 ms on one; docs/benchmarks.md).
 * Linux only, through util-linux's `taskset`; call it once the engine has loaded (the pool's
 * threads start with its first work). Says where each went, for the log.
 */
export async function keepEngineOnCpus({ cpus, threads, mainThreadElsewhere }: EngineCpus): Promise<string> {
  const engineCpus = engineCpuList(cpus, threads);
  const allowed = allowedCpus(await readFile('/proc/self/status', 'utf8'));
  const otherCpus = allowed.filter((cpu) => !engineCpus.includes(cpu));
  const engineList = engineCpus.join(',');
  const otherList = otherCpus.join(',');
  for (const thread of await readdir('/proc/self/task')) {
    const name = (await readFile(`/proc/self/task/${thread}/comm`, 'utf8').catch(() => '')).trim();
    const isMain = thread === String(process.pid);
    const list = name === V8_HELPERS || (isMain && mainThreadElsewhere) ? otherList : engineList;
    if (list !== '') await setThreadCpus(thread, list);
  }
  const where = otherList === '' ? 'where they were (no CPU left besides)' : `on CPU ${otherList}`;
  const elsewhere = mainThreadElsewhere ? `the main thread and ${V8_HELPERS}` : `the ${V8_HELPERS}`;
  return `llama.cpp's threads on CPU ${engineList}, ${elsewhere} ${where}`;
}

async function setThreadCpus(thread: string, list: string): Promise<void> {
  try {
    await execFileAsync('taskset', ['--pid', '--cpu-list', list, thread]);
  } catch (error) {
    const { code, stderr } = error as { code?: string; stderr?: string };
    // A thread that ended meanwhile has nothing left to place.
    if (stderr?.includes('No such process')) return;
    const why = code === 'ENOENT' ? 'taskset (util-linux) is not installed' : (stderr?.trim() ?? String(error));
    throw new Error(`cannot put thread ${thread} on CPU ${list}: ${why}`);
  }
}
