import { createHash, timingSafeEqual } from 'node:crypto';
import { Matches, ValidateIf } from 'class-validator';
import { SecretEnv } from './secret-env';

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/**
 * METRICS_TOKEN, for both apps: when set, `/metrics` answers only `Authorization: Bearer <token>`.
 * Prometheus sends it with `authorization: { credentials_file: ... }` in its scrape config.
 */
export const MetricsTokenEnv = (): PropertyDecorator => (target, property) => {
  SecretEnv()(target, property);
  ValidateIf((_env: object, value: unknown) => value !== '')(target, property);
  Matches(/^\S{16,}$/, { message: 'must be at least 16 characters without spaces (or unset, which leaves /metrics open)' })(target, property);
};

/**
 * The scrape credential, compared as SHA-256 digests with timingSafeEqual so that timing reveals
 * neither the token nor its length. An empty token means /metrics is open.
 */
export class MetricsToken {
  private readonly expected: Buffer | undefined;

  constructor(token: string) {
    this.expected = token === '' ? undefined : digest(token);
  }

  get required(): boolean {
    return this.expected !== undefined;
  }

  /** Whether a request with this `Authorization` header may read the metrics. */
  accepts(authorization: string | undefined): boolean {
    if (!this.expected) return true;
    const match = typeof authorization === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(authorization) : null;
    return match !== null && timingSafeEqual(digest(match[1]), this.expected);
  }
}
