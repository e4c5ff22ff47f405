import type { CursorPage } from '../http/cursor-query';
import { newTimeOrderedId, timeOfId, timeOrderedIdPattern } from '../http/time-ordered-ids';

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

export const FILE_ID_PATTERN = timeOrderedIdPattern('file-');

/** `file-` and 24 characters, in creation order (see newTimeOrderedId). */
export const newFileId = (now = Date.now()): string => newTimeOrderedId('file-', now);

export const isFileId = (value: string): boolean => FILE_ID_PATTERN.test(value);

/** When a file was created, in Unix milliseconds, read from its id. */
export const fileIdTime = (id: string): number => timeOfId(id, 'file-');
