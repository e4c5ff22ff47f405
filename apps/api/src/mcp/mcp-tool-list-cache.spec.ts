import { McpToolListCache } from './mcp-tool-list-cache';
import type { McpServer, McpToolInfo } from './mcp-types';

const server = (headers: Record<string, string>): McpServer => ({ label: 'a', url: 'https://mcp.example.com/', headers, registered: false });
const TOOLS: McpToolInfo[] = [{ name: 't', description: null, input_schema: { type: 'object' }, annotations: null }];

describe('McpToolListCache', () => {
  afterEach(() => jest.useRealTimers());

  it('keys by URL and headers, whatever their order and case, never showing them', () => {
    const key = McpToolListCache.keyOf(server({ Authorization: 'Bearer a', 'X-B': '1' }));
    expect(McpToolListCache.keyOf(server({ 'x-b': '1', authorization: 'Bearer a' }))).toBe(key);
    expect(McpToolListCache.keyOf(server({ Authorization: 'Bearer b', 'X-B': '1' }))).not.toBe(key);
    expect(key).not.toContain('Bearer');
  });

  it('serves a listing under way and for the TTL after it arrived, then lets it go', async () => {
    jest.useFakeTimers({ now: 0 });
    const cache = new McpToolListCache(1000);
    const listing = Promise.resolve(TOOLS);
    cache.set('k', listing);
    expect(cache.get('k')).toBe(listing);
    await listing;
    jest.setSystemTime(999);
    expect(cache.get('k')).toBe(listing);
    jest.setSystemTime(1001);
    expect(cache.get('k')).toBeUndefined();
  });

  it('forgets a failed listing at once, and keeps none with a TTL of 0', async () => {
    const cache = new McpToolListCache(0);
    const failed = Promise.reject(new Error('down'));
    cache.set('f', failed);
    await failed.catch(() => undefined);
    expect(cache.get('f')).toBeUndefined();
    const listing = Promise.resolve(TOOLS);
    cache.set('k', listing);
    expect(cache.get('k')).toBe(listing);
    await listing;
    await Promise.resolve();
    expect(cache.get('k')).toBeUndefined();
  });
});
