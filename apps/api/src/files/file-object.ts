import { randomInt } from 'node:crypto';
import type { CursorPage } from '../http/cursor-query';

/** Every purpose OpenAI gives a file; clients may upload `batch` only, the service writes `batch_output`. */
export const FILE_PURPOSES = [
  'assistants',
  'assistants_output',
  'batch',
  'batch_output',
  'fine-tune',
  'fine-tune-results',
  'vision',
  'user_data',
  'evals',
] as const;
export type FilePurpose = (typeof FILE_PURPOSES)[number];

export const isFilePurpose = (value: unknown): value is FilePurpose => (FILE_PURPOSES as readonly unknown[]).includes(value);

/** OpenAI's `File` object (openai's `FileObject`): this service keeps no expiry and processes on upload. */
export interface FileObject {
  id: string;
  object: 'file';
  bytes: number;
  created_at: number;
  filename: string;
  purpose: FilePurpose;
  status: 'processed';
  expires_at: null;
  status_details: null;
}

export type FileList = CursorPage<FileObject>;

export interface FileDeleted {
  id: string;
  object: 'file';
  deleted: true;
}

/** What is kept of a file besides its body (in Redis, see file-records.ts). */
export interface FileRecord {
  id: string;
  owner: string;
  filename: string;
  bytes: number;
  purpose: FilePurpose;
  /** Unix seconds. */
  createdAt: number;
}

export function toFileObject(record: FileRecord): FileObject {
  return {
    id: record.id,
    object: 'file',
    bytes: record.bytes,
    created_at: record.createdAt,
    filename: record.filename,
    purpose: record.purpose,
    status: 'processed',
    expires_at: null,
    status_details: null,
  };
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** Milliseconds in fixed-width base 36 (9 digits last until the year 5188), then randomness. */
const TIME_DIGITS = 9;
const RANDOM_CHARS = 15;
export const FILE_ID_PATTERN = /^file-[0-9a-z]{9}[0-9A-Za-z]{15}$/;

/**
 * `file-` and 24 characters, as OpenAI's ids look. They begin with the creation time, so ids
 * sort (byte-wise, as Redis compares them) in creation order: a listing cursor is an id, and
 * stays a valid position after that file is deleted.
 */
export function newFileId(now = Date.now()): string {
  let random = '';
  for (let i = 0; i < RANDOM_CHARS; i++) random += BASE62[randomInt(BASE62.length)];
  return `file-${now.toString(36).padStart(TIME_DIGITS, '0')}${random}`;
}

export const isFileId = (value: string): boolean => FILE_ID_PATTERN.test(value);

/** When a file was created, in Unix milliseconds, read from its id. */
export const fileIdTime = (id: string): number => parseInt(id.slice('file-'.length, 'file-'.length + TIME_DIGITS), 36);
