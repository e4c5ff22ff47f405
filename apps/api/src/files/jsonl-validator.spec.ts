import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { pipeline } from 'node:stream/promises';
import type { OpenAiErrorBody } from '../errors/openai-error';
import { OpenAiError } from '../errors/openai-error';
import { JsonlValidator } from './jsonl-validator';
import type { JsonlLimits } from './jsonl-validator';

const LIMITS: JsonlLimits = { maxBytes: 1024 * 1024, maxLines: 100 };

/** Runs `chunks` through a validator; the bytes that came out, or the error, and the status it maps to. */
async function check(
  chunks: Array<string | Buffer>,
  limits = LIMITS,
): Promise<{ out?: Buffer; size: number; error?: OpenAiErrorBody['error']; status?: number }> {
  const validator = new JsonlValidator(limits);
  const out = buffer(validator);
  void out.catch(() => undefined); // the same error is the pipeline's
  try {
    await pipeline(Readable.from(chunks.map((chunk) => Buffer.from(chunk))), validator);
    return { out: await out, size: validator.size };
  } catch (error) {
    if (!(error instanceof OpenAiError)) throw error;
    return { size: validator.size, error: error.toBody().error, status: error.status };
  }
}

describe('JsonlValidator', () => {
  it('passes a valid file through unchanged and counts its bytes', async () => {
    const file = '{"custom_id":"a","body":{}}\r\n\n  {"custom_id":"b"}  \n{"é":"ü"}';
    const { out, size, error } = await check([file]);
    expect(error).toBeUndefined();
    expect(out?.toString('utf8')).toBe(file);
    expect(size).toBe(Buffer.byteLength(file));
  });

  it('reassembles lines and characters split across chunks', async () => {
    const bytes = Buffer.from('{"a":"é€😀"}\n{"b":1}\n');
    const chunks = [...bytes].map((byte) => Buffer.from([byte])); // one byte at a time
    const { out, error } = await check(chunks);
    expect(error).toBeUndefined();
    expect(out?.equals(bytes)).toBe(true);
  });

  it('names `file` and the line of the first line that is not JSON', async () => {
    const { error, status } = await check(['{"a":1}\n\n{"b":', '2}\n{"c":3\n{"d":4}\n']);
    expect(status).toBe(400);
    expect(error).toMatchObject({ param: 'file', type: 'invalid_request_error', code: 'invalid_file' });
    expect(error?.message).toMatch(/^Line 4 of the file is not valid JSON/);
  });

  it.each([
    ['an array', '[1,2]'],
    ['a string', '"text"'],
    ['null', 'null'],
    ['a number', '42'],
  ])('refuses a line that is %s, naming its line', async (kind, line) => {
    const { error } = await check([`{"ok":true}\n${line}\n`]);
    expect(error?.param).toBe('file');
    expect(error?.message).toBe(`Line 2 of the file is ${kind}, not a JSON object.`);
  });

  it('refuses bytes that are not UTF-8, naming their line', async () => {
    const { error } = await check([Buffer.from('{"a":1}\n{"b":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}\n')]);
    expect(error?.message).toBe('Line 2 of the file is not valid UTF-8.');
  });

  it('refuses a character cut short by the end of the file', async () => {
    const { error } = await check([Buffer.from('{"a":1}\n{"b":"'), Buffer.from([0xe2, 0x82])]);
    expect(error?.message).toBe('Line 2 of the file is not valid UTF-8.');
  });

  it('allows maxLines requests, blank lines not counted, and refuses one more with its line number', async () => {
    const lines = (count: number): string => Array.from({ length: count }, (_, i) => `{"i":${i}}\n\n`).join('');
    expect((await check([lines(3)], { ...LIMITS, maxLines: 3 })).error).toBeUndefined();
    const { error, status } = await check([lines(4)], { ...LIMITS, maxLines: 3 });
    expect(status).toBe(400);
    expect(error?.param).toBe('file');
    expect(error?.message).toMatch(/more than 3 requests \(line 7\)/);
  });

  it('allows exactly maxBytes and answers 413 naming `file` at one byte more', async () => {
    const file = '{"a":"xxxx"}\n';
    expect((await check([file], { ...LIMITS, maxBytes: file.length })).error).toBeUndefined();
    const { error, status } = await check([file, '\n'], { ...LIMITS, maxBytes: file.length });
    expect(status).toBe(413);
    expect(error).toMatchObject({ param: 'file', code: 'request_too_large' });
    expect(error?.message).toMatch(/larger than the limit of 13 bytes \(at line 2\)/);
  });

  it('refuses a file with no request in it', async () => {
    for (const file of ['', '\n\n  \r\n']) {
      const { error } = await check([file]);
      expect(error?.param).toBe('file');
      expect(error?.message).toMatch(/The file is empty/);
    }
  });
});
