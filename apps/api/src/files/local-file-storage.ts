import { createWriteStream } from 'node:fs';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { randomBytes } from 'node:crypto';
import { StoredFileMissingError, checkStorageKey } from './file-storage';
import type { FileStorage } from './file-storage';

const isMissing = (error: unknown): boolean => (error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';

/**
 * File bodies as files in one folder (FILES_DIR), created on demand. A body is written to a
 * temporary name and renamed into place once whole, so a reader never sees a partial file and
 * a failed upload leaves nothing behind. Several API instances may share the folder (a volume).
 */
export class LocalFileStorage implements FileStorage {
  private readonly dir: string;

  constructor(dir: string) {
    this.dir = resolve(dir);
  }

  async put(key: string, body: Readable): Promise<void> {
    const path = this.pathOf(key);
    await mkdir(this.dir, { recursive: true });
    const partial = `${path}.${randomBytes(6).toString('hex')}.partial`;
    try {
      await pipeline(body, createWriteStream(partial, { flags: 'wx' }));
      await rename(partial, path);
    } catch (error) {
      await rm(partial, { force: true });
      throw error;
    }
  }

  async open(key: string, start = 0): Promise<Readable> {
    try {
      const handle = await open(this.pathOf(key), 'r');
      return handle.createReadStream({ start });
    } catch (error) {
      throw isMissing(error) ? new StoredFileMissingError(key) : error;
    }
  }

  async delete(key: string): Promise<void> {
    await rm(this.pathOf(key), { force: true });
  }

  private pathOf(key: string): string {
    return join(this.dir, checkStorageKey(key));
  }
}
