import { fileIdTime, isFileId, newFileId } from './file-object';

describe('file ids', () => {
  it('look like OpenAI’s and carry their creation time', () => {
    const now = Date.now();
    const id = newFileId(now);
    expect(id).toMatch(/^file-[A-Za-z0-9]{24}$/);
    expect(isFileId(id)).toBe(true);
    expect(fileIdTime(id)).toBe(now);
  });

  it('sort byte-wise (as Redis orders equal scores) in creation order', () => {
    const times = [0, 1, 35, 36, 1_000_000, Date.now(), Date.now() + 1, 36 ** 9 - 1];
    const ids = times.map((time) => newFileId(time));
    expect([...ids].sort()).toEqual(ids);
  });

  it('are unique within one millisecond', () => {
    const ids = Array.from({ length: 10_000 }, () => newFileId(1_800_000_000_000));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('refuses what is not one of them', () => {
    for (const value of ['file-abc', 'file-0mwtz35mfbZwCn15E7WmeSk', '../file-0mwtz35mfbZwCn15E7WmeSkg', 'batch_0mwtz35mfbZwCn15E7WmeSkgX']) {
      expect(isFileId(value)).toBe(false);
    }
  });
});
