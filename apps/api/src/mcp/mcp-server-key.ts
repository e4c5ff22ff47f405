import { createHash } from 'node:crypto';
import type { McpServer } from './mcp-types';

/**
 * What tells servers apart for what is kept of them (listings, sessions): the URL and a hash of
 * the headers, whatever their order and case, so two clients with different credentials never
 * share anything, and the key shows no credential.
 */
export function mcpServerKey(server: McpServer): string {
  const headers = Object.entries(server.headers)
    .map(([name, value]) => [name.toLowerCase(), value])
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `${server.url} ${createHash('sha256').update(JSON.stringify(headers)).digest('hex')}`;
}
