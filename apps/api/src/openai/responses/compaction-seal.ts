import { Inject, Injectable } from '@nestjs/common';
import type { OnModuleInit } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import type { RedisClient } from '@app/redis';
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { COMMANDS_REDIS } from '../../redis/api-redis.module';
import { OpenAiError } from '../../errors/openai-error';

/** The key every instance seals with when the operator names none. DO NOT CHANGE: sealed items would no longer open. */
export const GENERATED_SEAL_KEY = 'compaction:seal-key';

const VERSION = 'cmp1';

interface SealKey {
  id: string;
  key: Buffer;
}

const sealKey = (secret: string): SealKey => {
  const key = createHash('sha256').update(`compaction\0${secret}`).digest();
  return { id: createHash('sha256').update(key).digest('hex').slice(0, 8), key };
};

const base64url = (buffer: Buffer): string => buffer.toString('base64url');

/**
 * Seals what a `compaction` item holds so a client can neither read nor forge it: AES-256-GCM under
 * a key derived from the first of COMPACTION_KEYS (the others still open what they sealed, so a
 * key is rotated by putting the new one first), bound to the API key that compacted (another key's
 * item does not open). Without COMPACTION_KEYS one key is generated once and kept in Redis for
 * every instance. The sealed form is `cmp1.<key id>.<iv>.<ciphertext and tag>`.
 */
@Injectable()
export class CompactionSeal implements OnModuleInit {
  private keys: SealKey[] = [];

  constructor(
    private readonly env: ApiEnv,
    @Inject(COMMANDS_REDIS) private readonly redis: RedisClient,
  ) {}

  async onModuleInit(): Promise<void> {
    if (this.env.COMPACTION_KEYS.length > 0) {
      this.keys = this.env.COMPACTION_KEYS.map(sealKey);
      return;
    }
    await this.redis.set(GENERATED_SEAL_KEY, randomBytes(32).toString('hex'), 'NX');
    const generated = await this.redis.get(GENERATED_SEAL_KEY);
    if (!generated) throw new Error(`${GENERATED_SEAL_KEY} vanished from Redis as it was written`);
    this.keys = [sealKey(generated)];
  }

  seal(owner: string, content: string): string {
    const [{ id, key }] = this.keys;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv).setAAD(Buffer.from(owner));
    const sealed = Buffer.concat([cipher.update(content, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return [VERSION, id, base64url(iv), base64url(sealed)].join('.');
  }

  /** What a `compaction` item of `owner` holds, for the job mapper: a 400 naming the item's content when it does not open. */
  opener(owner: string): (sealed: string, at: string) => string {
    return (sealed, at) => {
      const content = this.open(owner, sealed);
      if (content !== undefined) return content;
      const param = `${at}.encrypted_content`;
      throw OpenAiError.invalidRequest(
        `The compaction item's content could not be verified: it was not made by this service for this API key.`,
        param,
        'invalid_encrypted_content',
      );
    };
  }

  /** What `sealed` holds, or undefined when it was not sealed here for `owner` (altered, another key's, or a key no longer kept). */
  open(owner: string, sealed: string): string | undefined {
    const [version, id, iv, body, ...rest] = sealed.split('.');
    const key = this.keys.find((candidate) => candidate.id === id);
    if (version !== VERSION || !key || iv === undefined || body === undefined || rest.length > 0) return undefined;
    const bytes = Buffer.from(body, 'base64url');
    if (bytes.length < 16) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', key.key, Buffer.from(iv, 'base64url')).setAAD(Buffer.from(owner));
      decipher.setAuthTag(bytes.subarray(bytes.length - 16));
      return Buffer.concat([decipher.update(bytes.subarray(0, bytes.length - 16)), decipher.final()]).toString('utf8');
    } catch {
      return undefined;
    }
  }
}
