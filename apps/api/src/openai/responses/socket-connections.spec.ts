import { ConnectionsPerKey } from './socket-connections';

describe('ConnectionsPerKey', () => {
  it('refuses a key at its bound until one of its connections is given back', () => {
    const connections = new ConnectionsPerKey(2);
    const first = connections.take('a');
    expect(connections.take('a')).toBeDefined();
    expect(connections.take('a')).toBeUndefined();
    // Another key has its own bound.
    expect(connections.take('b')).toBeDefined();
    first!();
    expect(connections.held('a')).toBe(1);
    expect(connections.take('a')).toBeDefined();
  });

  it('counts a connection given back twice once', () => {
    const connections = new ConnectionsPerKey(1);
    const release = connections.take('a')!;
    release();
    release();
    expect(connections.held('a')).toBe(0);
    expect(connections.take('a')).toBeDefined();
    expect(connections.take('a')).toBeUndefined();
  });
});
