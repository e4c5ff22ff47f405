import type { FactoryProvider } from '@nestjs/common';
import { ApiEnv, InvalidEnvironmentError, loadEnv } from '@app/config';
import type { FileStorage } from './file-storage';
import { fileStorageProviders } from './file-storage.providers';
import { LocalFileStorage } from './local-file-storage';
import { S3FileStorage, s3ClientConfig } from './s3-file-storage';

const env = (vars: NodeJS.ProcessEnv): ApiEnv => loadEnv(ApiEnv, { API_KEYS: 'sk-test-key-123', ...vars });
/** The lines InvalidEnvironmentError lists for `vars`; empty when they are accepted. */
function problemsWith(vars: NodeJS.ProcessEnv): string {
  try {
    env(vars);
    return '';
  } catch (error) {
    return (error as InvalidEnvironmentError).problems.join('\n');
  }
}
const storageFor = (config: ApiEnv): FileStorage => (fileStorageProviders[0] as FactoryProvider<FileStorage>).useFactory(config) as FileStorage;

describe('FILES_* configuration', () => {
  it('keeps bodies in ./data/files by default, and within 200 MiB and 50,000 lines', () => {
    const config = env({});
    expect(config).toMatchObject({ FILES_STORAGE: 'local', FILES_DIR: './data/files', FILES_MAX_BYTES: 200 * 1024 * 1024, FILES_MAX_LINES: 50_000 });
    expect(storageFor(config)).toBeInstanceOf(LocalFileStorage);
  });

  it('uses a bucket with FILES_STORAGE=s3, and refuses to start without one', () => {
    const storage = storageFor(env({ FILES_STORAGE: 's3', FILES_S3_BUCKET: 'batch-files' }));
    expect(storage).toBeInstanceOf(S3FileStorage);
    (storage as S3FileStorage).onApplicationShutdown();
    expect(() => env({ FILES_STORAGE: 's3' })).toThrow(InvalidEnvironmentError);
    expect(problemsWith({ FILES_STORAGE: 's3' })).toMatch(/^FILES_S3_BUCKET: /);
  });

  it('names every malformed variable', () => {
    const bad = { FILES_STORAGE: 'ftp', FILES_MAX_BYTES: '1e9', FILES_MAX_LINES: '0', FILES_S3_ENDPOINT: 'minio:9000', FILES_S3_FORCE_PATH_STYLE: 'yes' };
    const problems = problemsWith(bad);
    for (const name of Object.keys(bad)) expect(problems).toContain(name);
  });

  it('talks to AWS with the SDK defaults, and to another endpoint path-style with checksums only where required', () => {
    expect(s3ClientConfig(env({ FILES_S3_REGION: 'eu-west-1' }))).toEqual({ region: 'eu-west-1', forcePathStyle: false });
    expect(s3ClientConfig(env({ FILES_S3_ENDPOINT: 'http://minio:9000', FILES_S3_FORCE_PATH_STYLE: 'true' }))).toEqual({
      region: 'us-east-1',
      forcePathStyle: true,
      endpoint: 'http://minio:9000',
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  });
});
