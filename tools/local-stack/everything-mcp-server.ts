import { resolve } from 'node:path';
import { freePort } from './free-port';
import { ManagedProcess } from './managed-process';
import { REPO_ROOT } from './services';

/** `@modelcontextprotocol/server-everything` over streamable HTTP on 127.0.0.1: its `/mcp` URL and its process. */
export interface EverythingServer {
  url: string;
  port: number;
  process: ManagedProcess;
}

/**
 * Starts the published MCP reference server (echo, get-sum, …) on `port` (a free one by default)
 * and waits until it listens; its output goes to `logFile`. Tests and benchmarks run it on loopback.
 */
export async function startEverythingServer(
  name: string,
  port?: number,
  logFile = resolve(REPO_ROOT, `test-artifacts/logs/${name}.log`),
): Promise<EverythingServer> {
  port ??= await freePort();
  const process = new ManagedProcess({
    name,
    command: globalThis.process.execPath,
    args: [resolve(REPO_ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js'), 'streamableHttp'],
    env: { ...globalThis.process.env, PORT: String(port) },
    logFile,
  });
  await process.waitForOutput(/listening on port/i, 30_000);
  return { url: `http://127.0.0.1:${port}/mcp`, port, process };
}
