import type { JobOf } from '@app/contracts';
import type { GenerationContentRemoved } from '@app/worker';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { REPO_ROOT } from '../tools/local-stack/services';
import { STACK_API_KEY, STACK_MODEL, ServiceStack } from './support/service-stack';

/** The CLI as npm installs it: its launcher runs the Linux binary that ships in @openai/codex-linux-x64. */
const CODEX = resolve(REPO_ROOT, 'node_modules/@openai/codex/bin/codex.js');

/**
 * Codex's prompt is about 17,000 tokens of the generated model's vocabulary (its ~21,000
 * characters of instructions, its tools and the environment context): the worker needs a context
 * of more than that, and the generated models announce 32,768.
 */
const CODEX_CONTEXT = '32768';

/** The stack's API log (ServiceStack names it after the stack), where every request's line is. */
const API_LOG = resolve(REPO_ROOT, 'test-artifacts/logs/responses-codex-api.log');

/**
 * A custom provider on wire_api "responses", with every call that would leave the machine turned
 * off; `websockets`: `supports_websockets = true`, Codex's switch to the Responses WebSocket mode.
 */
function codexConfig(baseUrl: string, websockets = false): string {
  return [
    `model = "${STACK_MODEL}"`,
    'model_provider = "queued"',
    'check_for_update_on_startup = false',
    'web_search = "disabled"',
    '',
    '[analytics]',
    'enabled = false',
    '',
    '[model_providers.queued]',
    'name = "queued"',
    `base_url = "${baseUrl}"`,
    'env_key = "QUEUED_API_KEY"',
    'wire_api = "responses"',
    'request_max_retries = 0',
    'stream_max_retries = 0',
    ...(websockets ? ['supports_websockets = true'] : []),
    '',
  ].join('\n');
}

/** One local MCP server, started by Codex over stdio: Codex sends its tools as a `namespace` tool. */
const MCP_EVERYTHING = [
  '[mcp_servers.everything]',
  `command = ${JSON.stringify(process.execPath)}`,
  `args = [${JSON.stringify(resolve(REPO_ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js'))}]`,
  'startup_timeout_sec = 30',
  // Two of its tools: all of them would not fit the context beside Codex's own prompt.
  'enabled_tools = ["echo", "get-sum"]',
  '',
].join('\n');

function runCodex(home: string, workdir: string, prompt: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [CODEX, 'exec', '--skip-git-repo-check', '--sandbox', 'read-only', prompt], {
      cwd: workdir,
      // Only what it needs: no OPENAI_API_KEY or proxy from the environment reaches it.
      env: { PATH: process.env.PATH, HOME: home, CODEX_HOME: home, QUEUED_API_KEY: STACK_API_KEY },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 100_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
  });
}

describe('Codex CLI (codex exec) on /v1/responses', () => {
  let stack: ServiceStack;
  let home: string;

  beforeAll(async () => {
    stack = await ServiceStack.start({ name: 'responses-codex', workerEnv: { CONTEXT_SIZE: CODEX_CONTEXT } });
    home = mkdtempSync(join(tmpdir(), 'codex-home-'));
    writeFileSync(join(home, 'config.toml'), codexConfig(stack.baseUrl));
  });

  afterAll(async () => {
    await stack?.stop();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it('runs codex exec with a custom provider (wire_api = "responses") to an answer, exit code 0', async () => {
    const { code, stdout, stderr } = await runCodex(home, home, 'Say hello.');
    expect({ code, stderr: code === 0 ? '' : stderr }).toEqual({ code: 0, stderr: '' });
    expect(stderr).toContain('provider: queued');
    expect(stdout.trim()).toMatch(/[a-z]{2,}/);

    // What reached the worker: Codex's long instructions as the system message, its function
    // tools, and none of its hosted tools (web_search, namespace), which cannot run here.
    // The model may call one of Codex's tools first (Codex then runs it and sends its output back).
    const jobs = (await stack.queue().getJobs(['completed'])).sort((a, b) => a.timestamp - b.timestamp);
    expect(jobs.length).toBeGreaterThanOrEqual(1);
    // The worker keeps no contents (RETAIN_CONTENT=false): each message's role and length remain.
    const data = jobs[0].data as JobOf<'generate'> & { contentRemoved?: GenerationContentRemoved };
    const messages = data.contentRemoved?.messages ?? [];
    expect(messages[0].role).toBe('system');
    expect(messages[0].characters).toBeGreaterThan(10_000);
    expect(messages.at(-1)?.role).toBe('user');
    const tools = data.options.tools?.definitions.map((tool) => tool.name) ?? [];
    expect(tools.length).toBeGreaterThan(0);
    expect(tools).not.toContain('web_search');
  }, 120_000);

  it("offers the model a configured MCP server's tools (Codex's namespace tool)", async () => {
    const mcpHome = mkdtempSync(join(tmpdir(), 'codex-home-mcp-'));
    try {
      writeFileSync(join(mcpHome, 'config.toml'), `${codexConfig(stack.baseUrl)}\n${MCP_EVERYTHING}`);
      const before = new Set((await stack.queue().getJobs(['completed'])).map((job) => job.id));
      const { code, stderr } = await runCodex(mcpHome, mcpHome, 'Echo the word hello with the echo tool.');
      expect({ code, stderr: code === 0 ? '' : stderr }).toEqual({ code: 0, stderr: '' });
      const [first] = (await stack.queue().getJobs(['completed'])).filter((job) => !before.has(job.id)).sort((a, b) => a.timestamp - b.timestamp);
      // Names only: the worker keeps no contents (RETAIN_CONTENT=false), schemas included.
      const names = (first.data as JobOf<'generate'>).options.tools?.definitions.map((tool) => tool.name) ?? [];
      // The server's members (Codex names get-sum get_sum) under their own names, where no other tool has them.
      expect(names).toEqual(expect.arrayContaining(['echo', 'get_sum']));
    } finally {
      rmSync(mcpHome, { recursive: true, force: true });
    }
  }, 120_000);

  it('runs its turns over the WebSocket mode with supports_websockets = true, no POST', async () => {
    const wsHome = mkdtempSync(join(tmpdir(), 'codex-home-ws-'));
    try {
      writeFileSync(join(wsHome, 'config.toml'), codexConfig(stack.baseUrl, true));
      const logFrom = readFileSync(API_LOG, 'utf8').length;
      const jobsBefore = (await stack.queue().getJobs(['completed'])).length;
      const { code, stdout, stderr } = await runCodex(wsHome, wsHome, 'Say hello.');
      expect({ code, stderr: code === 0 ? '' : stderr }).toEqual({ code: 0, stderr: '' });
      expect(stdout.trim()).toMatch(/[a-z]{2,}/);
      // The answer came from the worker, and the API's request log holds only upgrades (101) on
      // /v1/responses, no POST: Codex may open one to probe or warm up before the one its turns use.
      expect((await stack.queue().getJobs(['completed'])).length).toBeGreaterThan(jobsBefore);
      const requests = readFileSync(API_LOG, 'utf8')
        .slice(logFrom)
        .split('\n')
        .filter((line) => line.includes('"request completed"'))
        .map((line) => JSON.parse(line) as { method: string; route: string; status: number });
      const responses = requests.filter((request) => request.route.startsWith('/v1/responses'));
      expect(responses.length).toBeGreaterThanOrEqual(1);
      for (const request of responses) expect(request).toMatchObject({ method: 'GET', route: '/v1/responses', status: 101 });
    } finally {
      rmSync(wsHome, { recursive: true, force: true });
    }
  }, 120_000);
});
