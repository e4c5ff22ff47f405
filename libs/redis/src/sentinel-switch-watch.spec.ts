import { switchOf } from './sentinel-switch-watch';

describe('switchOf', () => {
  it("reads the replaced and the new primary of the watched master's switch", () => {
    expect(switchOf('mymaster', 'mymaster 127.0.0.1 6379 127.0.0.1 6380')).toEqual({ previous: '127.0.0.1:6379', primary: '127.0.0.1:6380' });
  });

  it("ignores another master's switch and a message it cannot read", () => {
    expect(switchOf('mymaster', 'othermaster 127.0.0.1 6379 127.0.0.1 6380')).toBeUndefined();
    expect(switchOf('mymaster', 'mymaster 127.0.0.1 6379')).toBeUndefined();
  });
});
