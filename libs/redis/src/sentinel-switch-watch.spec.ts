import { switchedPrimary } from './sentinel-switch-watch';

describe('switchedPrimary', () => {
  it("reads the new primary of the watched master's switch", () => {
    expect(switchedPrimary('mymaster', 'mymaster 127.0.0.1 6379 127.0.0.1 6380')).toBe('127.0.0.1:6380');
  });

  it("ignores another master's switch and a message it cannot read", () => {
    expect(switchedPrimary('mymaster', 'othermaster 127.0.0.1 6379 127.0.0.1 6380')).toBeUndefined();
    expect(switchedPrimary('mymaster', 'mymaster')).toBeUndefined();
  });
});
