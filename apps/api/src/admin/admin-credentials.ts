import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/**
 * The operators' credential (ADMIN_USER / ADMIN_PASSWORD), checked from an HTTP Basic
 * `Authorization` header. User and password are compared together, as one SHA-256 digest with
 * timingSafeEqual, so timing reveals neither of them nor their lengths. It is a credential of
 * its own: an API key never opens the admin pages.
 */
export class AdminCredentials {
  private readonly expected: Buffer;

  constructor(user: string, password: string) {
    this.expected = digest(`${user}:${password}`);
  }

  /** Whether the header carries `Basic base64(user:password)` with exactly these credentials. */
  accepts(authorization: string | undefined): boolean {
    const match = typeof authorization === 'string' ? /^Basic\s+([A-Za-z0-9+/]+=*)\s*$/i.exec(authorization) : null;
    if (!match) return false;
    const given = Buffer.from(match[1], 'base64').toString('utf8');
    return timingSafeEqual(digest(given), this.expected);
  }
}
