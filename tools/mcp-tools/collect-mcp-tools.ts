/**
 * `npm run mcp:collect`: lists the tools of published MCP servers (installed as dev dependencies)
 * over stdio with the AI SDK's MCP client, and writes them as the AI SDK sends them to a model
 * (its `tools()` conversion: the server's inputSchema with `properties` filled in and
 * `additionalProperties: false`) to test/fixtures/mcp-tools.json. The tests read that snapshot;
 * run this again after updating the servers.
 */
import { createMCPClient } from '@ai-sdk/mcp';
import { Experimental_StdioMCPTransport } from '@ai-sdk/mcp/mcp-stdio';
import { asSchema } from 'ai';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

interface Server {
  name: string;
  /** The package's server script, relative to node_modules. */
  script: string;
  args?: string[];
  /** Placeholder credentials: listing tools needs none, but some servers refuse to start without. */
  env?: Record<string, string>;
}

const scratch = mkdtempSync(join(tmpdir(), 'mcp-collect-'));
const SERVERS: Server[] = [
  { name: 'filesystem', script: '@modelcontextprotocol/server-filesystem/dist/index.js', args: [scratch] },
  { name: 'memory', script: '@modelcontextprotocol/server-memory/dist/index.js', env: { MEMORY_FILE_PATH: join(scratch, 'memory.jsonl') } },
  { name: 'sequential-thinking', script: '@modelcontextprotocol/server-sequential-thinking/dist/index.js' },
  { name: 'everything', script: '@modelcontextprotocol/server-everything/dist/index.js', args: ['stdio'] },
  { name: 'notion', script: '@notionhq/notion-mcp-server/bin/cli.mjs', env: { NOTION_TOKEN: 'ntn_placeholder' } },
  { name: 'firecrawl', script: 'firecrawl-mcp/dist/index.js', env: { FIRECRAWL_API_KEY: 'fc-placeholder' } },
  { name: 'context7', script: '@upstash/context7-mcp/dist/index.js' },
  { name: 'playwright', script: '@playwright/mcp/cli.js' },
  { name: 'chrome-devtools', script: 'chrome-devtools-mcp/build/src/bin/chrome-devtools-mcp.js' },
];

export interface CollectedTool {
  server: string;
  name: string;
  description?: string;
  /** The JSON Schema the AI SDK sends as the function's parameters. */
  parameters: Record<string, unknown>;
}

async function listTools(server: Server): Promise<CollectedTool[]> {
  const transport = new Experimental_StdioMCPTransport({
    command: process.execPath,
    args: [resolve('node_modules', server.script), ...(server.args ?? [])],
    env: { PATH: process.env.PATH ?? '', HOME: scratch, ...server.env },
  });
  const client = await createMCPClient({ transport });
  try {
    const tools = await client.tools();
    return await Promise.all(
      Object.entries(tools).map(async ([name, tool]) => ({
        server: server.name,
        name,
        ...(typeof tool.description === 'string' ? { description: tool.description } : {}),
        parameters: (await asSchema(tool.inputSchema).jsonSchema) as Record<string, unknown>,
      })),
    );
  } finally {
    await client.close();
  }
}

async function main(): Promise<void> {
  const collected: CollectedTool[] = [];
  for (const server of SERVERS) {
    try {
      const tools = await listTools(server);
      console.log(`${server.name}: ${tools.length} tools`);
      collected.push(...tools);
    } catch (error) {
      console.error(`${server.name}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  const out = resolve('test/fixtures/mcp-tools.json');
  writeFileSync(out, `${JSON.stringify(collected, null, 1)}\n`);
  console.log(`${collected.length} tools -> ${out}`);
}

void main();
