import type { Provider } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { S3Client } from '@aws-sdk/client-s3';
import { FILE_STORAGE } from './file-storage';
import type { FileStorage } from './file-storage';
import { LocalFileStorage } from './local-file-storage';
import { S3FileStorage, s3ClientConfig } from './s3-file-storage';

/** FILES_STORAGE picks where bodies go: a local folder (the default) or an S3 bucket. */
export const fileStorageProviders: Provider[] = [
  {
    provide: FILE_STORAGE,
    inject: [ApiEnv],
    useFactory: (env: ApiEnv): FileStorage =>
      env.FILES_STORAGE === 's3' ? new S3FileStorage(new S3Client(s3ClientConfig(env)), env.FILES_S3_BUCKET) : new LocalFileStorage(env.FILES_DIR),
  },
];
