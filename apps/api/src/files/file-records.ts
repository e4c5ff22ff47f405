import { Inject, Injectable } from '@nestjs/common';
import { aString, checked, fields, satisfies } from '@app/contracts';
import { execResults } from '@app/redis';
import type { RedisClient } from '@app/redis';
import { COMMANDS_REDIS } from '../redis/api-redis.module';
import { OpenAiError } from '../errors/openai-error';
import { fileIdTime, isFilePurpose } from './file-object';
import type { FilePurpose, FileRecord } from './file-object';
import { fileKey, ownerFilesKey, ownerPurposeFilesKey } from './file-keys';

export interface PageQuery {
  purpose?: FilePurpose;
  /** A file id: the page starts after it in `order` (it may have been deleted since). */
  after?: string;
  order: 'asc' | 'desc';
  limit: number;
}

export interface Page {
  records: FileRecord[];
  hasMore: boolean;
}

const indexUnavailable = (): OpenAiError =>
  OpenAiError.unavailable('The service cannot reach its file index right now. Please retry shortly.', 'service_unavailable', 2);

/** Redis errors become a 503 with Retry-After, as on the completions path; nothing else is touched. */
async function orUnavailable<T>(operation: Promise<T>): Promise<T> {
  try {
    return await operation;
  } catch (error) {
    throw error instanceof OpenAiError ? error : indexUnavailable();
  }
}

/** A file's hash as `save` writes it: numbers as their decimal text. */
interface FileHash {
  owner: string;
  filename: string;
  bytes: string;
  purpose: FilePurpose;
  created_at: string;
}

const decimal = satisfies((value) => typeof value === 'string' && /^\d+$/.test(value), 'a count as text');
const fileHash = fields<FileHash>({
  owner: aString,
  filename: aString,
  bytes: decimal,
  purpose: satisfies(isFilePurpose, 'a file purpose'),
  created_at: decimal,
});

/** The record, or undefined when its hash is gone (HGETALL answers an empty hash); a hash it cannot read throws. */
function parseRecord(id: string, hash: Record<string, string>): FileRecord | undefined {
  if (Object.keys(hash).length === 0) return undefined;
  const { owner, filename, bytes, purpose, created_at: createdAt } = checked<FileHash>(hash, fileHash, `file record ${id}`);
  return { id, owner, filename, bytes: Number(bytes), purpose, createdAt: Number(createdAt) };
}

/**
 * Files' metadata in Redis. Each file is a hash under its own hash tag; each owner has sorted
 * sets of its file ids scored by creation time in milliseconds (one for all its files, one per
 * purpose), under the owner's tag. The two live in different slots, so they are written in an
 * order that a crash between the steps cannot turn into a visible file without a body: the body
 * is stored first (by the caller), then the hash, then the indexes; deletion runs backwards.
 * An index entry whose hash is gone is skipped when listing.
 */
@Injectable()
export class FileRecords {
  constructor(@Inject(COMMANDS_REDIS) private readonly redis: RedisClient) {}

  async save(record: FileRecord): Promise<void> {
    const { id, owner, purpose } = record;
    const hash = { owner, filename: record.filename, bytes: String(record.bytes), purpose, created_at: String(record.createdAt) };
    await orUnavailable(this.redis.hset(fileKey(id), hash));
    const score = fileIdTime(id);
    await orUnavailable(
      this.redis.multi().zadd(ownerFilesKey(owner), score, id).zadd(ownerPurposeFilesKey(owner, purpose), score, id).exec().then(execResults),
    );
  }

  async find(id: string): Promise<FileRecord | undefined> {
    return parseRecord(id, await orUnavailable(this.redis.hgetall(fileKey(id))));
  }

  async remove(record: FileRecord): Promise<void> {
    const { id, owner, purpose } = record;
    await orUnavailable(this.redis.multi().zrem(ownerFilesKey(owner), id).zrem(ownerPurposeFilesKey(owner, purpose), id).exec().then(execResults));
    await orUnavailable(this.redis.del(fileKey(id)));
  }

  /** One page of the owner's files, newest or oldest first, and whether more follow. */
  async page(owner: string, query: PageQuery): Promise<Page> {
    const ids = await orUnavailable(this.pageIds(owner, query));
    const found = await Promise.all(ids.slice(0, query.limit).map((id) => this.find(id)));
    // An index entry can outlive its hash only by a crash mid-deletion; such an entry is skipped.
    const records = found.filter((record): record is FileRecord => record !== undefined && record.owner === owner);
    return { records, hasMore: ids.length > query.limit };
  }

  /**
   * Up to limit + 1 ids after the cursor, in order. Ids sharing the cursor's millisecond are
   * ordered by id (as Redis orders equal scores), so those come from a second range on exactly
   * that score, and both ranges are read in one transaction on the owner's slot.
   */
  private async pageIds(owner: string, { purpose, after, order, limit }: PageQuery): Promise<string[]> {
    const key = purpose === undefined ? ownerFilesKey(owner) : ownerPurposeFilesKey(owner, purpose);
    const count = limit + 1;
    if (after === undefined) {
      return order === 'asc'
        ? this.redis.zrangebyscore(key, '-inf', '+inf', 'LIMIT', 0, count)
        : this.redis.zrevrangebyscore(key, '+inf', '-inf', 'LIMIT', 0, count);
    }
    const time = fileIdTime(after);
    const transaction =
      order === 'asc'
        ? this.redis.multi().zrangebyscore(key, time, time).zrangebyscore(key, `(${time}`, '+inf', 'LIMIT', 0, count)
        : this.redis.multi().zrevrangebyscore(key, time, time).zrevrangebyscore(key, `(${time}`, '-inf', 'LIMIT', 0, count);
    const [sameTime, later] = execResults(await transaction.exec()) as string[][];
    const beyond = sameTime.filter((id) => (order === 'asc' ? id > after : id < after));
    return [...beyond, ...later].slice(0, count);
  }
}
