import { Type } from 'class-transformer';
import { IsIn, IsInt, IsOptional, Matches, Max, Min } from 'class-validator';
import { FILE_ID_PATTERN, FILE_PURPOSES } from './file-object';
import type { FilePurpose } from './file-object';

/** `GET /v1/files` query, as OpenAI's FileListParams: purpose, limit (1-10,000), order, after. */
export class ListFilesQueryDto {
  @IsOptional()
  @IsIn(FILE_PURPOSES, { message: `purpose must be one of ${FILE_PURPOSES.join(', ')}` })
  purpose?: FilePurpose;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(10_000)
  limit: number = 10_000;

  @IsOptional()
  @IsIn(['asc', 'desc'])
  order: 'asc' | 'desc' = 'desc';

  /** A file id from an earlier page (`last_id`). */
  @IsOptional()
  @Matches(FILE_ID_PATTERN, { message: 'after must be a file id (the last_id of an earlier page)' })
  after?: string;
}
