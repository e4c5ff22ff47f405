import { Transform } from 'node:stream';
import type { TransformCallback } from 'node:stream';
import { isJsonObject, jsonKindOf } from '@app/contracts';
import { OpenAiError } from '../errors/openai-error';

export interface JsonlLimits {
  maxBytes: number;
  /** Most non-empty lines (one request each). */
  maxLines: number;
}

const NEWLINE = 0x0a;

const invalidFile = (message: string): OpenAiError => OpenAiError.invalidRequest(message, 'file', 'invalid_file');

/**
 * Passes a batch input file through unchanged while checking it, so that it can be streamed to
 * storage as it arrives: UTF-8 throughout, every non-empty line a JSON object, at most
 * `maxLines` of them and `maxBytes` in all. The first violation fails the stream with a 400 (413
 * for the size) naming `file` and the line number; only the line being read is held in memory.
 */
export class JsonlValidator extends Transform {
  private readonly decoder = new TextDecoder('utf-8', { fatal: true });
  private bytes = 0;
  /** Physical line being read (1-based) and non-empty lines seen before it. */
  private lineNumber = 1;
  private requests = 0;
  /** The decoded start of the current line. */
  private pending = '';

  constructor(private readonly limits: JsonlLimits) {
    super();
  }

  /** Bytes that went through: the stored file's size once the stream has ended. */
  get size(): number {
    return this.bytes;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.limits.maxBytes) {
      callback(OpenAiError.tooLarge(`The file is larger than the limit of ${this.limits.maxBytes} bytes (at line ${this.lineNumber}).`, 'file'));
      return;
    }
    try {
      let start = 0;
      for (let end = chunk.indexOf(NEWLINE); end !== -1; end = chunk.indexOf(NEWLINE, start)) {
        this.endLine(this.pending + this.decode(chunk.subarray(start, end), false));
        this.pending = '';
        start = end + 1;
      }
      this.pending += this.decode(chunk.subarray(start), true);
    } catch (error) {
      callback(error as Error);
      return;
    }
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    try {
      this.endLine(this.pending + this.decode(Buffer.alloc(0), false));
      if (this.requests === 0) throw invalidFile('The file is empty: a batch input file has one JSON object per line.');
    } catch (error) {
      callback(error as Error);
      return;
    }
    callback();
  }

  /** A newline byte never occurs inside a UTF-8 sequence, so each line decodes on its own. */
  private decode(bytes: Buffer, more: boolean): string {
    try {
      return this.decoder.decode(bytes, { stream: more });
    } catch {
      throw invalidFile(`Line ${this.lineNumber} of the file is not valid UTF-8.`);
    }
  }

  private endLine(text: string): void {
    const line = text.trim();
    if (line !== '') this.checkLine(line);
    this.lineNumber++;
  }

  private checkLine(line: string): void {
    if (++this.requests > this.limits.maxLines) {
      throw invalidFile(`The file has more than ${this.limits.maxLines} requests (line ${this.lineNumber}); split it into several batches.`);
    }
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      throw invalidFile(`Line ${this.lineNumber} of the file is not valid JSON: each line must be one JSON object.`);
    }
    if (!isJsonObject(value)) {
      throw invalidFile(`Line ${this.lineNumber} of the file is ${jsonKindOf(value)}, not a JSON object.`);
    }
  }
}
