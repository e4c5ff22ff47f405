import { Inject, Injectable } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import type { CompletionJobInput, CompletionUsage } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { COMMANDS_REDIS } from '../redis/api-redis.module';
import { OpenAiError } from '../errors/openai-error';
import { estimateAnswerTokens, estimatePromptTokens } from './token-estimate';

const estimateTokens = (job: CompletionJobInput): number => estimatePromptTokens(job) + estimateAnswerTokens(job);

/** What an admitted request holds against its key's token budget until its usage is known. */
export interface TokenReservation {
  /** Replaces the estimate with the real usage. */
  settle(usage: CompletionUsage): void;
  /** Gives back what admission took: the request was refused or never queued after all. */
  refund(): void;
}

/**
 * Requests and tokens per window for each API key, counted in Redis so every API instance
 * shares one budget. Tokens are reserved from an estimate when the request is admitted and
 * corrected with the model's own count when it ends. A limit of 0 turns that limit off.
 */
@Injectable()
export class ApiKeyRateLimits {
  private readonly requests?: RateLimiterRedis;
  private readonly tokens?: RateLimiterRedis;

  constructor(
    private readonly env: ApiEnv,
    @Inject(COMMANDS_REDIS) redis: RedisClient,
  ) {
    const window = env.RATE_LIMIT_WINDOW_SECONDS;
    const limiter = (keyPrefix: string, points: number) =>
      points > 0 ? new RateLimiterRedis({ storeClient: redis, keyPrefix, points, duration: window, rejectIfRedisNotReady: true }) : undefined;
    this.requests = limiter('ratelimit:requests', env.RATE_LIMIT_RPM);
    this.tokens = limiter('ratelimit:tokens', env.RATE_LIMIT_TPM);
  }

  /** Counts the request against its key, or refuses it with 429 (503 while Redis is away). */
  async admit(apiKeyId: string, job: CompletionJobInput): Promise<TokenReservation> {
    const { requests, tokens } = this;
    const giveBackRequest = (): void => void requests?.reward(apiKeyId, 1).catch(() => undefined);
    if (requests) await this.consume(requests, apiKeyId, 1, 'requests');
    if (!tokens) return { settle: () => undefined, refund: giveBackRequest };
    const estimate = estimateTokens(job);
    try {
      await this.consume(tokens, apiKeyId, estimate, 'tokens');
    } catch (error) {
      giveBackRequest();
      throw error;
    }
    return {
      settle: (usage) => {
        const difference = usage.total_tokens - estimate;
        const correction = difference > 0 ? tokens.penalty(apiKeyId, difference) : tokens.reward(apiKeyId, -difference);
        correction.catch(() => undefined);
      },
      refund: () => {
        giveBackRequest();
        tokens.reward(apiKeyId, estimate).catch(() => undefined);
      },
    };
  }

  private async consume(limiter: RateLimiterRedis, apiKeyId: string, points: number, kind: 'requests' | 'tokens'): Promise<void> {
    try {
      await limiter.consume(apiKeyId, points);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) {
        throw OpenAiError.unavailable('The service cannot reach its rate limiter right now. Please retry shortly.', 'service_unavailable', 2);
      }
      // rate-limiter-flexible counts refused points too. A refused request still counts (as at
      // OpenAI, so resending at once does not help), but the tokens it asked for it never used.
      if (kind === 'tokens') limiter.reward(apiKeyId, points).catch(() => undefined);
      throw this.limitReached(kind, limiter.points, points, rejection);
    }
  }

  private limitReached(kind: 'requests' | 'tokens', limit: number, requested: number, state: RateLimiterRes): OpenAiError {
    const waitMs = Math.max(state.msBeforeNext, 1);
    const used = Math.min(limit, state.consumedPoints - requested);
    const window = `${this.env.RATE_LIMIT_WINDOW_SECONDS} s`;
    const message =
      `Rate limit reached for ${kind} per ${window}: Limit ${limit}, Used ${used}, Requested ${requested}. ` +
      `Please try again in ${(waitMs / 1000).toFixed(1)}s.`;
    return new OpenAiError(429, kind, message, null, 'rate_limit_exceeded', {
      'retry-after': String(Math.ceil(waitMs / 1000)),
      'retry-after-ms': String(waitMs),
      [`x-ratelimit-limit-${kind}`]: String(limit),
      [`x-ratelimit-remaining-${kind}`]: String(Math.max(0, limit - used)),
      [`x-ratelimit-reset-${kind}`]: `${(waitMs / 1000).toFixed(3)}s`,
    });
  }
}
