import { Injectable } from '@nestjs/common';
import type { CanActivate, ExecutionContext } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import type { FastifyRequest } from 'fastify';
import { createHash, timingSafeEqual } from 'node:crypto';
import { OpenAiError } from '../errors/openai-error';

const digest = (key: string): Buffer => createHash('sha256').update(key).digest();

/** Who is calling, as limits, tiers and ownership know a key: a prefix of its SHA-256, never the key itself. */
export const apiKeyIdOf = (keyDigest: Buffer): string => keyDigest.toString('hex').slice(0, 24);

/** The caller of a request this guard let through: owner of what it creates, subject of its limits. */
export const callerOf = (request: FastifyRequest): string => request.apiKeyId ?? '';

/** The id of a configured key (API_KEYS, PRIORITY_TIER_KEYS). */
export const apiKeyId = (key: string): string => apiKeyIdOf(digest(key));

declare module 'fastify' {
  interface FastifyRequest {
    /** Who is calling, for per-key limits: a prefix of the key's SHA-256, never the key itself. */
    apiKeyId?: string;
  }
}

/**
 * `Authorization: Bearer <key>` against API_KEYS. Keys are compared as SHA-256 digests with
 * timingSafeEqual, over every configured key, so timing reveals neither a key nor its length.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  private readonly keyDigests: Buffer[];

  constructor(env: ApiEnv) {
    this.keyDigests = env.API_KEYS.map(digest);
  }

  canActivate(context: ExecutionContext): boolean {
    this.authenticate(context.switchToHttp().getRequest<FastifyRequest>());
    return true;
  }

  /** Marks the request with its caller's id, or throws the 401 (also for a WebSocket's upgrade, which no guard sees). */
  authenticate(request: FastifyRequest): void {
    const header = request.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!match) {
      throw OpenAiError.unauthorized(
        "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
        null,
      );
    }
    const given = digest(match[1]);
    let known = false;
    for (const keyDigest of this.keyDigests) known = timingSafeEqual(given, keyDigest) || known;
    if (!known) throw OpenAiError.unauthorized('Incorrect API key provided.', 'invalid_api_key');
    request.apiKeyId = apiKeyIdOf(given);
  }
}
