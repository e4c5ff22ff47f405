import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeTinyModel } from '../make-tiny-model';
import { readGguf } from './gguf-reader';

describe('makeTinyModel', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tiny-model-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('writes once, then leaves an identical file alone, and replaces a different one', () => {
    const out = join(dir, 'nested', 'tiny-chat.gguf');
    const first = makeTinyModel({ name: 'tiny-chat', corpus: 'alice', out });
    expect(first).toEqual({ path: out, bytes: statSync(out).size, written: true });
    expect(readGguf(readFileSync(out)).metadata.get('general.name')).toBe('tiny-chat');

    const second = makeTinyModel({ name: 'tiny-chat', corpus: 'alice', out });
    expect(second.written).toBe(false);

    writeFileSync(out, 'stale');
    const third = makeTinyModel({ name: 'tiny-chat', corpus: 'alice', out });
    expect(third.written).toBe(true);
    expect(statSync(out).size).toBe(first.bytes);
  });
});
