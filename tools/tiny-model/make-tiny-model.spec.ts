import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeTinyModel } from '../make-tiny-model';
import { readGguf } from './gguf-reader';
import { THINKING_TEMPLATE } from './thinking-template';

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

  it('writes the same weights with a reasoning template when asked for thinking', () => {
    const plain = readGguf(readFileSync(makeTinyModel({ name: 'tiny-think', corpus: 'alice', out: join(dir, 'plain.gguf') }).path));
    const thinking = readGguf(readFileSync(makeTinyModel({ name: 'tiny-think', corpus: 'alice', out: join(dir, 'think.gguf'), thinking: true }).path));
    expect(thinking.metadata.get('tokenizer.chat_template')).toBe(THINKING_TEMPLATE);
    expect(plain.metadata.get('tokenizer.chat_template')).not.toBe(THINKING_TEMPLATE);
    expect(thinking.tensors.map((tensor) => tensor.name)).toEqual(plain.tensors.map((tensor) => tensor.name));
  });
});
