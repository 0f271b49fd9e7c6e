/**
 * API-key authentication (`Authorization: Bearer <key>`, keys from the setting `vss.admin.apiKeys`;
 * none configured turns it off). Probes and the scrape endpoint stay open, as on the other services'
 * ops servers: /healthz, /readyz and /metrics.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { LatticeError } from '../../../platform/errors.js';

/** Paths answered without a key. */
export const OPEN_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics']);

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

export class ApiKeys {
  private readonly digests: readonly Buffer[];

  constructor(keys: readonly string[]) {
    // Comparing fixed-length digests keeps the comparison's time independent of the key's length.
    this.digests = keys.map(digest);
  }

  get enabled(): boolean {
    return this.digests.length > 0;
  }

  /**
   * Checks the request's Authorization header; UNAUTHENTICATED (field `Authorization`) when it is
   * missing, not a bearer token, or no configured key. Every key is compared, in constant time.
   */
  check(authorization: string | undefined): void {
    if (!this.enabled) return;
    if (authorization === undefined || authorization === '') {
      throw unauthenticated('an API key is required: send Authorization: Bearer <key>');
    }
    const match = /^Bearer[ ]+(\S+)\s*$/i.exec(authorization);
    if (match === null) throw unauthenticated('Authorization must be "Bearer <key>"');
    const presented = digest(match[1]!);
    let known = false;
    for (const key of this.digests) known = timingSafeEqual(presented, key) || known;
    if (!known) throw unauthenticated('the API key is not valid');
  }
}

function unauthenticated(message: string): LatticeError {
  return new LatticeError('UNAUTHENTICATED', message, { field: 'Authorization' });
}

/** The challenge sent with every 401 (RFC 6750). */
export const WWW_AUTHENTICATE = 'Bearer realm="lattice-vss-admin"';
