import type { Readable } from 'node:stream';

/**
 * Where file bodies are kept (metadata is in Redis). Keys are file ids. Two implementations,
 * chosen by FILES_STORAGE: a local folder and an S3-compatible bucket.
 */
export interface FileStorage {
  /**
   * Stores all of `body` under `key`. Resolves once it is stored whole; when `body` fails (an
   * upload refused half-way, a client gone), rejects with that error and leaves nothing under `key`.
   */
  put(key: string, body: Readable): Promise<void>;
  /**
   * The stored bytes from byte `start` (0: all of them; `start` must be below the size); rejects
   * with StoredFileMissingError when nothing is stored under `key`.
   */
  open(key: string, start?: number): Promise<Readable>;
  /** Removes the body; a key with nothing stored is not an error. */
  delete(key: string): Promise<void>;
}

export const FILE_STORAGE = Symbol('FILE_STORAGE');

export class StoredFileMissingError extends Error {
  constructor(readonly key: string) {
    super(`no stored file body under ${key}`);
    this.name = 'StoredFileMissingError';
  }
}

const SAFE_KEY = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

/** Keys become file names and object keys: nothing in them may climb out of the folder or prefix. */
export function checkStorageKey(key: string): string {
  if (!SAFE_KEY.test(key)) throw new Error(`invalid file storage key: ${JSON.stringify(key)}`);
  return key;
}
