import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { buffer, text } from 'node:stream/consumers';
import { StoredFileMissingError } from './file-storage';
import { LocalFileStorage } from './local-file-storage';

/** `count` chunks of 64 KiB, each filled with its own index, so that order and content both count. */
function* numberedChunks(count: number): Generator<Buffer> {
  for (let index = 0; index < count; index++) yield Buffer.alloc(64 * 1024, index % 251);
}

/** On the real file system, in a fresh temporary folder. */
describe('LocalFileStorage', () => {
  let root: string;
  let dir: string;
  let storage: LocalFileStorage;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'files-spec-'));
    dir = join(root, 'not', 'yet', 'there');
    storage = new LocalFileStorage(dir);
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('creates its folder on demand and stores the body as one file named by its key', async () => {
    const body = '{"custom_id":"a"}\n{"custom_id":"é"}\n';
    await storage.put('file-abc', Readable.from([Buffer.from(body)]));
    expect(readdirSync(dir)).toEqual(['file-abc']);
    expect(readFileSync(join(dir, 'file-abc'), 'utf8')).toBe(body);
    expect(await text(await storage.open('file-abc'))).toBe(body);
    // From a byte offset (a batch's feed reads on where it stopped).
    expect(await text(await storage.open('file-abc', 18))).toBe(body.slice(18));
  });

  it('streams a large body through and reads back exactly the same bytes', async () => {
    await storage.put('file-large', Readable.from(numberedChunks(320))); // 20 MiB
    const stored = await buffer(await storage.open('file-large'));
    expect(stored.equals(Buffer.concat([...numberedChunks(320)]))).toBe(true);
  });

  it('leaves nothing behind when the body fails half-way, and rejects with its error', async () => {
    const refused = new Error('line 7 is not JSON');
    const failing = Readable.from(
      (function* () {
        yield* numberedChunks(16);
        throw refused;
      })(),
    );
    await expect(storage.put('file-failed', failing)).rejects.toBe(refused);
    expect(readdirSync(dir)).toEqual([]);
    await expect(storage.open('file-failed')).rejects.toBeInstanceOf(StoredFileMissingError);
  });

  it('keeps the earlier body whole while a new one under the same key is still being written', async () => {
    await storage.put('file-x', Readable.from([Buffer.from('first\n')]));
    const slow = new Readable({ read: () => undefined });
    const writing = storage.put('file-x', slow);
    slow.push(Buffer.from('sec'));
    // The new bytes are on disk, under another name, before the old body is read.
    for (let tries = 0; !readdirSync(dir).some((name) => name.endsWith('.partial') && statSync(join(dir, name)).size === 3); tries++) {
      if (tries > 200) throw new Error('the partial body never reached the disk');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(await text(await storage.open('file-x'))).toBe('first\n');
    slow.push(Buffer.from('ond\n'));
    slow.push(null);
    await writing;
    expect(await text(await storage.open('file-x'))).toBe('second\n');
  });

  it('deletes a body; deleting one that is not there is not an error', async () => {
    await storage.put('file-gone', Readable.from([Buffer.from('{}\n')]));
    await storage.delete('file-gone');
    await expect(storage.open('file-gone')).rejects.toBeInstanceOf(StoredFileMissingError);
    await expect(storage.delete('file-gone')).resolves.toBeUndefined();
    expect(readdirSync(dir)).toEqual([]);
  });

  it('refuses keys that would reach outside its folder', async () => {
    for (const key of ['../escape', 'a/b', '', '.hidden']) {
      await expect(storage.put(key, Readable.from([Buffer.from('x')]))).rejects.toThrow(/invalid file storage key/);
      await expect(storage.open(key)).rejects.toThrow(/invalid file storage key/);
    }
    expect(readdirSync(root)).toEqual([]);
  });
});
