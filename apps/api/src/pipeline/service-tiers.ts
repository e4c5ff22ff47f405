import { Injectable } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import type { ServiceTier } from '@app/contracts';
import { apiKeyId } from '../auth/api-key.guard';

/**
 * Which tier a request is served in: what it asks for (`service_tier`), as far as its key may.
 * `priority` is for the keys in PRIORITY_TIER_KEYS; anyone else asking for it, and `auto`,
 * `scale` or nothing, gets `default`. The answer's `service_tier` says which one it got.
 */
@Injectable()
export class ServiceTiers {
  private readonly priorityKeys: ReadonlySet<string>;

  constructor(env: ApiEnv) {
    const unknown = env.PRIORITY_TIER_KEYS.filter((key) => !env.API_KEYS.includes(key));
    if (unknown.length > 0) throw new Error(`PRIORITY_TIER_KEYS: ${unknown.length} key(s) not in API_KEYS`);
    this.priorityKeys = new Set(env.PRIORITY_TIER_KEYS.map(apiKeyId));
  }

  granted(requested: string | undefined, keyId: string): ServiceTier {
    if (requested === 'flex') return 'flex';
    if (requested === 'priority' && this.priorityKeys.has(keyId)) return 'priority';
    return 'default';
  }
}
