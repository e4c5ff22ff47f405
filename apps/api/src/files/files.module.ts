import { Module } from '@nestjs/common';
import { FileRecords } from './file-records';
import { fileStorageProviders } from './file-storage.providers';
import { FilesController } from './files.controller';
import { FilesService } from './files.service';

/** The Files API: metadata in Redis, bodies in FILES_STORAGE. */
@Module({
  controllers: [FilesController],
  providers: [...fileStorageProviders, FileRecords, FilesService],
  exports: [FilesService],
})
export class FilesModule {}
