import { Inject, Injectable } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import type { RedisClient } from '@app/redis';
import { COMMANDS_REDIS } from '../../redis/api-redis.module';
import { OpenAiError } from '../../errors/openai-error';
import { conversationKeys } from './conversation-store';

/** Renews the lease (ARGV[2] ms) only while this holder (ARGV[1]) still has it. */
const RENEW_LUA = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
`;

/** Releases the lock only while this holder (ARGV[1]) still has it: a lapsed lease taken by another stays theirs. */
const RELEASE_LUA = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('DEL', KEYS[1])
`;

type WithScripts = RedisClient & {
  renewConversationLock(key: string, holder: string, leaseMs: string): Promise<number>;
  releaseConversationLock(key: string, holder: string): Promise<number>;
};

/** Stops renewing the lock and gives it back (when its holder still has it; else its lease lapses). */
export type ReleaseLock = () => void;

/** OpenAI's answer to a second writer of a conversation (its words and code, which clients branch on). */
export const conversationLocked = (): OpenAiError =>
  OpenAiError.invalidRequest(
    'Another process is currently operating on this conversation. Please retry in a few seconds.',
    'conversation',
    'conversation_locked',
  );

/**
 * One response at a time per conversation, on every API instance: a Redis key holding the
 * response's id, with a lease of RESUME_GRACE_MS renewed three times per lease while the
 * response runs, so that an instance that dies holds it no longer than that. The response's end
 * gives it back in the step that appends its turn (ConversationStore.append), before the client
 * hears the end, so a client's next turn never finds its own last one still holding it. A second response is refused (`conversation_locked`,
 * as OpenAI answers it) rather than made to wait: a waiting request would hold an HTTP
 * connection and its admission for as long as the first one generates, with no bound a client
 * chose, and OpenAI's clients already retry this error.
 */
@Injectable()
export class ConversationLocks {
  private readonly redis: WithScripts;
  private readonly leaseMs: number;

  constructor(env: ApiEnv, @Inject(COMMANDS_REDIS) redis: RedisClient) {
    redis.defineCommand('renewConversationLock', { numberOfKeys: 1, lua: RENEW_LUA });
    redis.defineCommand('releaseConversationLock', { numberOfKeys: 1, lua: RELEASE_LUA });
    this.redis = redis as WithScripts;
    this.leaseMs = env.RESUME_GRACE_MS;
  }

  /** Takes the conversation's lock for the response `holder`, or throws `conversation_locked` while another response holds it. */
  async take(conversationId: string, holder: string): Promise<ReleaseLock> {
    const key = conversationKeys(conversationId).lock;
    if ((await this.redis.set(key, holder, 'PX', this.leaseMs, 'NX')) === null) throw conversationLocked();
    const lease = String(this.leaseMs);
    const timer = setInterval(() => void this.redis.renewConversationLock(key, holder, lease).catch(() => undefined), Math.floor(this.leaseMs / 3));
    timer.unref();
    return () => {
      clearInterval(timer);
      void this.release(conversationId, holder).catch(() => undefined);
    };
  }

  /** Gives the lock back if `holder` still has it. */
  async release(conversationId: string, holder: string): Promise<void> {
    await this.redis.releaseConversationLock(conversationKeys(conversationId).lock, holder);
  }
}
