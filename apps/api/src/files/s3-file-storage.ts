import { DeleteObjectCommand, GetObjectCommand, NoSuchKey } from '@aws-sdk/client-s3';
import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { OnApplicationShutdown } from '@nestjs/common';
import type { ApiEnv } from '@app/config';
import { Readable } from 'node:stream';
import { StoredFileMissingError, checkStorageKey } from './file-storage';
import type { FileStorage } from './file-storage';

/** Where in the bucket bodies go, so that the bucket can hold other things too. */
export const S3_KEY_PREFIX = 'files/';

/**
 * The client for FILES_STORAGE=s3; credentials come from the SDK's default chain
 * (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, a profile, an instance or pod role).
 */
export function s3ClientConfig(env: Pick<ApiEnv, 'FILES_S3_ENDPOINT' | 'FILES_S3_REGION' | 'FILES_S3_FORCE_PATH_STYLE'>): S3ClientConfig {
  const config: S3ClientConfig = { region: env.FILES_S3_REGION, forcePathStyle: env.FILES_S3_FORCE_PATH_STYLE };
  if (env.FILES_S3_ENDPOINT === '') return config;
  // S3-compatible servers do not all accept the checksum trailers the SDK adds by default
  // (older MinIO, Ceph, R2): against another endpoint, checksums only where S3 requires them.
  return { ...config, endpoint: env.FILES_S3_ENDPOINT, requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' };
}

/**
 * File bodies as objects in an S3 bucket (AWS, MinIO, any S3-compatible store). Uploads stream:
 * lib-storage sends a body of unknown length in 5 MiB parts (at most 4 in memory at once) and
 * aborts the multipart upload when the body fails, so nothing is left under the key.
 */
export class S3FileStorage implements FileStorage, OnApplicationShutdown {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
  ) {}

  async put(key: string, body: Readable): Promise<void> {
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.bucket, Key: this.objectKey(key), Body: body, ContentType: 'application/octet-stream' },
    });
    await upload.done();
  }

  async open(key: string, start = 0): Promise<Readable> {
    try {
      const range = start > 0 ? `bytes=${start}-` : undefined;
      const { Body } = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key), Range: range }));
      if (!(Body instanceof Readable)) throw new Error(`S3 GetObject returned no stream for ${key}`);
      return Body;
    } catch (error) {
      throw error instanceof NoSuchKey ? new StoredFileMissingError(key) : error;
    }
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }));
  }

  onApplicationShutdown(): void {
    this.client.destroy();
  }

  private objectKey(key: string): string {
    return `${S3_KEY_PREFIX}${checkStorageKey(key)}`;
  }
}
