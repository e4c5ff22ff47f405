import { Controller, Delete, Get, HttpCode, Param, Post, Query, Req, Res, UseGuards } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiKeyGuard, callerOf } from '../auth/api-key.guard';
import type { FileDeleted, FileList, FileObject } from './file-object';
import { FilesService } from './files.service';
import { ListFilesQueryDto } from './list-files-query.dto';
import { readUploadForm } from './upload-form';

/** OpenAI's Files API: upload (batch input only), retrieve, list, content, delete. */
@Controller('v1/files')
@UseGuards(ApiKeyGuard)
export class FilesController {
  constructor(
    private readonly files: FilesService,
    private readonly env: ApiEnv,
  ) {}

  @Post()
  @HttpCode(200)
  async upload(@Req() request: FastifyRequest): Promise<FileObject> {
    const { purpose, received } = await readUploadForm(request, this.env.FILES_MAX_BYTES, this.files);
    return this.files.commit(callerOf(request), received, purpose);
  }

  @Get()
  list(@Req() request: FastifyRequest, @Query() query: ListFilesQueryDto): Promise<FileList> {
    return this.files.list(callerOf(request), query);
  }

  @Get(':id')
  get(@Req() request: FastifyRequest, @Param('id') id: string): Promise<FileObject> {
    return this.files.get(callerOf(request), id);
  }

  /** The bytes as uploaded (or as written, for outputs), streamed from storage. */
  @Get(':id/content')
  async content(@Req() request: FastifyRequest, @Param('id') id: string, @Res() reply: FastifyReply): Promise<void> {
    const { file, body } = await this.files.open(callerOf(request), id);
    void reply.header('content-type', 'application/octet-stream').header('content-length', file.bytes).send(body);
  }

  @Delete(':id')
  delete(@Req() request: FastifyRequest, @Param('id') id: string): Promise<FileDeleted> {
    return this.files.delete(callerOf(request), id);
  }
}
