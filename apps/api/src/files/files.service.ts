import { Inject, Injectable } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { Readable, Transform } from 'node:stream';
import type { TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { OpenAiError } from '../errors/openai-error';
import { cursorPage } from '../http/cursor-query';
import { fileIdTime, isFileId, newFileId, toFileObject } from './file-object';
import type { FileDeleted, FileList, FileObject, FilePurpose, FileRecord } from './file-object';
import { FileRecords } from './file-records';
import type { PageQuery } from './file-records';
import { FILE_STORAGE, StoredFileMissingError } from './file-storage';
import type { FileStorage } from './file-storage';
import { JsonlValidator } from './jsonl-validator';

export interface NewFile {
  filename: string;
  purpose: FilePurpose;
  body: Buffer | Readable;
}

/** One non-blank line of a stored file: its 1-based number, its text, and the byte offset just after it. */
export interface FileLine {
  line: number;
  text: string;
  end: number;
}

/** A body stored under a new id whose metadata is not written yet (see FilesService.receive). */
export interface ReceivedBody {
  id: string;
  filename: string;
  bytes: number;
}

/** The one 404 for a file that does not exist and a file of another API key alike. */
export const fileNotFound = (id: string): OpenAiError => OpenAiError.notFound(`No such File object: ${id}`, null, 'file_not_found');

/** Counts what goes through: the size of a body that is not checked as JSONL. */
class ByteCounter extends Transform {
  size = 0;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.size += chunk.length;
    callback(null, chunk);
  }
}

/**
 * OpenAI's Files: bodies in FileStorage, metadata and per-owner listings in Redis (FileRecords).
 * Every method takes the owner (the caller's API key id): another owner's file does not exist
 * for it. Batch input files (`purpose: batch`) are checked as JSONL within FILES_MAX_BYTES and
 * FILES_MAX_LINES as they are stored; files this service writes itself (`batch_output`) are not.
 */
@Injectable()
export class FilesService {
  constructor(
    private readonly env: ApiEnv,
    private readonly records: FileRecords,
    @Inject(FILE_STORAGE) private readonly storage: FileStorage,
  ) {}

  /** Stores a file whole and returns it; for a batch module's outputs, or any caller with a body at hand. */
  async create(owner: string, file: NewFile): Promise<FileObject> {
    const body = Buffer.isBuffer(file.body) ? Readable.from([file.body]) : file.body;
    const received = await this.receive(body, file.filename, file.purpose);
    return this.commit(owner, received, file.purpose);
  }

  /**
   * First half of an upload: streams `body` into storage under a new id, checked as `purpose`
   * requires, before the purpose is known for certain (a form may send it after the file).
   * A body refused half-way leaves nothing stored, and the refusal (an OpenAiError) is thrown.
   * Follow with commit() or discard().
   */
  async receive(body: Readable, filename: string, purpose: FilePurpose = 'batch'): Promise<ReceivedBody> {
    const id = newFileId();
    const meter = purpose === 'batch' ? new JsonlValidator({ maxBytes: this.env.FILES_MAX_BYTES, maxLines: this.env.FILES_MAX_LINES }) : new ByteCounter();
    // The body's own failure (a client gone, a malformed form) ends the meter with it, and so the put.
    const flowing = pipeline(body, meter);
    // Storage that fails without reading the body to its end must not leave the body waiting.
    const stored = this.storage.put(id, meter).catch((error: unknown) => {
      meter.destroy(error as Error);
      throw error;
    });
    const [flow, put] = await Promise.allSettled([flowing, stored]);
    if (flow.status === 'rejected' || put.status === 'rejected') {
      await this.storage.delete(id).catch(() => undefined);
      // Prefer the body's reason (a refusal, an aborted upload) over what it caused in storage.
      throw flow.status === 'rejected' ? flow.reason : (put as PromiseRejectedResult).reason;
    }
    return { id, filename, bytes: meter.size };
  }

  /** Second half of an upload: the file exists from here on, for its owner only. */
  async commit(owner: string, received: ReceivedBody, purpose: FilePurpose): Promise<FileObject> {
    // created_at is when the upload began, the time in the id that orders listings.
    const record: FileRecord = { ...received, owner, purpose, createdAt: Math.floor(fileIdTime(received.id) / 1000) };
    try {
      await this.records.save(record);
    } catch (error) {
      await this.discard(received);
      throw error;
    }
    return toFileObject(record);
  }

  /** An upload refused after its body was stored: the body goes (nothing else was written). */
  async discard(received: ReceivedBody): Promise<void> {
    await this.storage.delete(received.id).catch(() => undefined);
  }

  async get(owner: string, id: string): Promise<FileObject> {
    return toFileObject(await this.record(owner, id));
  }

  async list(owner: string, query: PageQuery): Promise<FileList> {
    const { records, hasMore } = await this.records.page(owner, query);
    return cursorPage(records.map(toFileObject), hasMore);
  }

  /** The file's bytes as stored. */
  async open(owner: string, id: string): Promise<{ file: FileObject; body: Readable }> {
    const record = await this.record(owner, id);
    return { file: toFileObject(record), body: await this.openBody(id) };
  }

  /** The stored bytes from `start`; metadata without a body (a deletion cut short between its steps) is a file that is gone. */
  private async openBody(id: string, start?: number): Promise<Readable> {
    try {
      return await this.storage.open(id, start);
    } catch (error) {
      throw error instanceof StoredFileMissingError ? fileNotFound(id) : error;
    }
  }

  /**
   * The file's lines in order, split on `\n` as uploads are checked, with their 1-based numbers and
   * the byte offset just after each; blank lines are skipped. `from` resumes at an earlier line's
   * `end` (with that line's number), reading only the rest of the file.
   */
  async *lines(owner: string, id: string, from: { byte: number; line: number } = { byte: 0, line: 0 }): AsyncGenerator<FileLine> {
    const record = await this.record(owner, id);
    if (from.byte >= record.bytes) return;
    const body = await this.openBody(id, from.byte);
    let line = from.line;
    let offset = from.byte;
    let carry: Buffer = Buffer.alloc(0);
    try {
      for await (const chunk of body as AsyncIterable<Buffer>) {
        let buffered: Buffer = carry.length === 0 ? chunk : Buffer.concat([carry, chunk]);
        for (let newline = buffered.indexOf(0x0a); newline >= 0; newline = buffered.indexOf(0x0a)) {
          line++;
          offset += newline + 1;
          // Trimmed as the upload check trims: a CRLF file's `\r`, a byte-order mark, spaces.
          const text = buffered.toString('utf8', 0, newline).trim();
          if (text !== '') yield { line, text, end: offset };
          buffered = buffered.subarray(newline + 1);
        }
        carry = buffered;
      }
      const text = carry.toString('utf8').trim();
      if (text !== '') yield { line: line + 1, text, end: offset + carry.length };
    } finally {
      body.destroy();
    }
  }

  async delete(owner: string, id: string): Promise<FileDeleted> {
    const record = await this.record(owner, id);
    await this.records.remove(record);
    await this.storage.delete(id);
    return { id, object: 'file', deleted: true };
  }

  private async record(owner: string, id: string): Promise<FileRecord> {
    const record = isFileId(id) ? await this.records.find(id) : undefined;
    if (record?.owner !== owner) throw fileNotFound(id);
    return record;
  }
}
