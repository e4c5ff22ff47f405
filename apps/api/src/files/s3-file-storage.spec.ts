import { CreateBucketCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import type { FauxqsServer } from 'fauxqs' with { 'resolution-mode': 'import' };
import type { S3ClientConfig } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { StoredFileMissingError } from './file-storage';
import { S3FileStorage, S3_KEY_PREFIX, s3ClientConfig } from './s3-file-storage';

/** `size` bytes of generated JSONL-ish text in 64 KiB chunks. */
function* chunks(size: number): Generator<Buffer> {
  const line = Buffer.from(`${JSON.stringify({ custom_id: 'x', body: 'y'.repeat(100) })}\n`);
  for (let sent = 0; sent < size;) {
    const chunk = Buffer.alloc(Math.min(64 * 1024, size - sent));
    for (let at = 0; at < chunk.length; at += line.length) line.copy(chunk, at);
    sent += chunk.length;
    yield chunk;
  }
}

/** A body of unknown length, as an upload is. */
const generated = (size: number): Readable => Readable.from(chunks(size));

async function sha256(stream: Readable): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of stream) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * Against a real S3 API over HTTP: fauxqs, an S3-compatible server started in this process on
 * a free port (no Docker here), spoken to by the AWS SDK v3 exactly as a bucket on AWS or MinIO
 * would be (path style, as MinIO needs). Both ways of sending checksums are covered: what this
 * service uses against another endpoint (WHEN_REQUIRED), and the SDK's default (CRC32 trailers
 * on streamed parts), as against AWS.
 */
describe('S3FileStorage', () => {
  let server: FauxqsServer;
  const credentials = { accessKeyId: 'test-key', secretAccessKey: 'test-secret' };

  beforeAll(async () => {
    const { startFauxqs } = await import('fauxqs');
    server = await startFauxqs({ port: 0, logger: false });
  });
  afterAll(() => server.stop());

  const settings: Array<[string, () => S3ClientConfig]> = [
    [
      'with the configuration FILES_S3_* gives (checksums only where required)',
      () => ({ ...s3ClientConfig({ FILES_S3_ENDPOINT: server.address, FILES_S3_REGION: 'us-east-1', FILES_S3_FORCE_PATH_STYLE: true }), credentials }),
    ],
    ["with the SDK's default checksums", () => ({ endpoint: server.address, region: 'us-east-1', forcePathStyle: true, credentials })],
  ];

  describe.each(settings)('%s', (name, config) => {
    let client: S3Client;
    let storage: S3FileStorage;
    /** The S3 operations the client sent, by name, since the last test began. */
    let sent: string[] = [];
    const bucket = `files-${name.length}-${Date.now()}`;
    const keysInBucket = async (): Promise<string[]> =>
      ((await client.send(new ListObjectsV2Command({ Bucket: bucket }))).Contents ?? []).map(({ Key }) => Key ?? '');

    beforeAll(async () => {
      client = new S3Client(config());
      client.middlewareStack.add(
        (next, context) => (args) => {
          sent.push(context.commandName ?? '?');
          return next(args);
        },
        { step: 'initialize' },
      );
      await client.send(new CreateBucketCommand({ Bucket: bucket }));
      storage = new S3FileStorage(client, bucket);
    });
    beforeEach(() => {
      sent = [];
    });
    afterAll(() => storage.onApplicationShutdown());

    it('stores a small body and reads it back byte for byte', async () => {
      const body = '{"custom_id":"a"}\n{"custom_id":"é"}\n';
      await storage.put('file-small', Readable.from([Buffer.from(body)]));
      expect(await text(await storage.open('file-small'))).toBe(body);
      // From a byte offset (a batch's feed reads on where it stopped).
      expect(await text(await storage.open('file-small', 18))).toBe(body.slice(18));
      expect(await keysInBucket()).toContain(`${S3_KEY_PREFIX}file-small`);
    });

    it('streams a 12 MiB body of unknown length as a multipart upload and reads back the same bytes', async () => {
      const size = 12 * 1024 * 1024;
      await storage.put('file-large', generated(size));
      expect(sent).toEqual(['CreateMultipartUploadCommand', 'UploadPartCommand', 'UploadPartCommand', 'UploadPartCommand', 'CompleteMultipartUploadCommand']);
      expect(await sha256(await storage.open('file-large'))).toBe(await sha256(generated(size)));
    });

    it('leaves nothing under the key when the body fails half-way, and rejects with its error', async () => {
      const refused = new Error('refused at line 9');
      const failing = Readable.from(
        (function* () {
          yield* chunks(7 * 1024 * 1024); // past the first 5 MiB part, so a multipart upload was started
          throw refused;
        })(),
      );
      await expect(storage.put('file-failed', failing)).rejects.toBe(refused);
      expect(sent).toContain('CreateMultipartUploadCommand');
      expect(sent.at(-1)).toBe('AbortMultipartUploadCommand');
      expect(await keysInBucket()).not.toContain(`${S3_KEY_PREFIX}file-failed`);
      await expect(storage.open('file-failed')).rejects.toBeInstanceOf(StoredFileMissingError);
    });

    it('deletes a body; deleting or opening one that is not there is as documented', async () => {
      await storage.put('file-gone', Readable.from([Buffer.from('{}\n')]));
      await storage.delete('file-gone');
      await expect(storage.open('file-gone')).rejects.toBeInstanceOf(StoredFileMissingError);
      await expect(storage.delete('file-gone')).resolves.toBeUndefined();
    });

    it('refuses keys that could name another object', async () => {
      await expect(storage.put('../other', Readable.from([]))).rejects.toThrow(/invalid file storage key/);
    });
  });
});
