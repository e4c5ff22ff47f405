import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import OpenAI from 'openai';
import { allowedCpus } from '../apps/worker/src/engine/engine-cpus';
import { ManagedProcess } from '../tools/local-stack/managed-process';
import { WORKER_ENTRY } from '../tools/local-stack/services';
import { ServiceStack, STACK_API_KEY, STACK_MODEL } from './support/service-stack';

/** Each thread of a process: its Linux name (the main thread's as `main`) and the CPUs it may run on. */
function threadCpus(pid: number): Array<{ name: string; cpus: number[] }> {
  return readdirSync(`/proc/${pid}/task`).map((thread) => ({
    name: thread === String(pid) ? 'main' : readFileSync(`/proc/${pid}/task/${thread}/comm`, 'utf8').trim(),
    cpus: allowedCpus(readFileSync(`/proc/${pid}/task/${thread}/status`, 'utf8')),
  }));
}

function processName(pid: number): string {
  return execFileSync('ps', ['-o', 'comm=', '-p', String(pid)], { encoding: 'utf8' }).trim();
}

/**
 * ENGINE_CPUS keeps llama.cpp's threads (Node's thread pool, the engine's own thread) on the CPUs
 * it lists and the worker's main thread and V8's helpers off them, and the worker serves as before.
 */
describe('ENGINE_CPUS', () => {
  const allowed = allowedCpus(readFileSync('/proc/self/status', 'utf8'));
  const engineCpu = allowed[allowed.length - 1];
  // With one CPU there is nowhere else to go: the main thread and V8's helpers stay where they were.
  const otherCpus = allowed.length > 1 ? allowed.filter((cpu) => cpu !== engineCpu) : allowed;
  let stack: ServiceStack;

  beforeAll(async () => {
    stack = await ServiceStack.start({ name: 'engine-cpus', workerEnv: { ENGINE_CPUS: String(engineCpu) } });
  });

  afterAll(() => stack?.stop());

  it("puts the engine's threads on its CPUs, the worker's main thread and V8's helpers beside them, and serves", async () => {
    const threads = threadCpus(stack.workers[0].pid!);
    expect(threads.map(({ name }) => name)).toEqual(expect.arrayContaining(['main', 'llama-engine', 'libuv-worker', 'V8Worker']));
    const elsewhere = ['main', 'V8Worker'];
    for (const thread of threads) expect(thread).toEqual({ name: thread.name, cpus: elsewhere.includes(thread.name) ? otherCpus : [engineCpu] });
    expect(stack.workers[0].recentOutput).toContain(`llama.cpp's threads on CPU ${engineCpu}, the main thread and V8Worker`);
    // Placed by id, not by name: the process keeps the name ps and pgrep know it by.
    expect(processName(stack.workers[0].pid!)).toBe('node');

    const client = new OpenAI({ apiKey: STACK_API_KEY, baseURL: stack.baseUrl });
    const answer = await client.chat.completions.create({
      model: STACK_MODEL,
      messages: [{ role: 'user', content: 'Tell me about the rabbit.' }],
      max_tokens: 8,
    });
    expect(answer.choices[0]?.message.content).toMatch(/\S/);
    expect(answer.usage?.completion_tokens).toBeGreaterThan(0);
  });

  it('leaves the worker and the API their process name without ENGINE_CPUS too (ps, pgrep node)', async () => {
    const plain = await stack.addWorker({ ENGINE_CPUS: '' });
    expect(plain.recentOutput).not.toContain("llama.cpp's threads on CPU");
    expect([processName(plain.pid!), processName(stack.api.process.pid!)]).toEqual(['node', 'node']);
  });

  it('refuses to start with more ENGINE_THREADS than ENGINE_CPUS lists, saying so', async () => {
    const worker = new ManagedProcess({
      name: 'engine-cpus-refused',
      command: process.execPath,
      args: [WORKER_ENTRY],
      env: {
        PATH: process.env.PATH,
        REDIS_URL: stack.redis.url,
        MODEL_PATH: 'models/tiny-chat.gguf',
        ENGINE_CPUS: String(engineCpu),
        ENGINE_THREADS: '2',
        HEALTH_PORT: '0',
      },
    });
    const closed = new Promise((resolve) => worker.child.once('close', resolve));
    expect(await worker.exit).toBe(1);
    await closed;
    expect(worker.recentOutput).toContain(`ENGINE_THREADS=2 is more than the 1 CPU(s) of ENGINE_CPUS=${engineCpu}`);
  });
});
