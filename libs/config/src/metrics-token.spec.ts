import { MetricsToken } from './metrics-token';

describe('MetricsToken', () => {
  const token = new MetricsToken('scrape-token-0123456789');

  it('accepts exactly the configured bearer token', () => {
    expect(token.required).toBe(true);
    expect(token.accepts('Bearer scrape-token-0123456789')).toBe(true);
    expect(token.accepts('bearer  scrape-token-0123456789 ')).toBe(true);
  });

  it('refuses a missing header, a wrong or partial token, and other schemes', () => {
    expect(token.accepts(undefined)).toBe(false);
    expect(token.accepts('Bearer scrape-token-012345678')).toBe(false);
    expect(token.accepts('Bearer scrape-token-0123456789x')).toBe(false);
    expect(token.accepts('Basic scrape-token-0123456789')).toBe(false);
    expect(token.accepts('scrape-token-0123456789')).toBe(false);
  });

  it('lets every request through when no token is configured', () => {
    const open = new MetricsToken('');
    expect(open.required).toBe(false);
    expect(open.accepts(undefined)).toBe(true);
  });
});
