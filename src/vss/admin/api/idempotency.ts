/**
 * `Idempotency-Key` on any POST: the first response (status and body) is kept in
 * `vss_admin_requests` and replayed for the same key; the same key on another path or with another
 * body is 409 (field `Idempotency-Key`).
 *
 * Concurrent duplicates never run twice: a request first *reserves* its key by inserting the row
 * (status 0) and only the inserter runs; a duplicate arriving meanwhile gets 409 "in progress" and
 * retries. A reservation whose process died is taken over after a lease. A takeover can overlap a
 * slow first run, which is safe because each route is idempotent underneath: registrations compare
 * with what is stored (same body → same resource), and operation routes pass a key derived from the
 * client's to the lifecycle, which returns the first operation for it (`lifecycleKey`). 5xx answers
 * release the reservation, so a retry after a fault runs again instead of replaying the fault.
 */
import { createHash } from 'node:crypto';
import { LatticeError } from '../../../platform/errors.js';
import type { SqlQueryable } from '../../../platform/sql/index.js';
import { canonicalJson } from './canonical-json.js';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
const FIELD = 'Idempotency-Key';
/** The column's bound (migration 8). */
export const MAX_IDEMPOTENCY_KEY = 256;
/** How long a reservation may stay unanswered before another request may take it over. */
export const DEFAULT_IDEMPOTENCY_LEASE_MS = 60_000;

export interface IdempotentRequest {
  key: string;
  method: string;
  path: string;
  /** sha256 of the body's canonical JSON (keys sorted), so key order does not matter. */
  bodySha256: string;
}

export type Claim = { kind: 'run' } | { kind: 'replay'; status: number; response: unknown };

interface StoredRequest {
  method: string;
  path: string;
  body_sha256: string;
  status_code: number;
  response: unknown;
}

/** The header's value, checked; undefined when the request has none. */
export function idempotencyKeyOf(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (Array.isArray(header)) throw invalid(`send one ${FIELD} header`);
  if (header.length === 0) throw invalid(`${FIELD} must not be empty`);
  if (header.length > MAX_IDEMPOTENCY_KEY) {
    throw invalid(`${FIELD} must be at most ${MAX_IDEMPOTENCY_KEY} characters, got ${header.length}`);
  }
  if (!/^[\x20-\x7e]+$/.test(header)) throw invalid(`${FIELD} must be printable ASCII`);
  return header;
}

/**
 * The key handed to the lifecycle for a client's key: a digest, so it fits the operations' column
 * whatever the client's length and cannot collide with keys the service derives itself.
 */
export function lifecycleKey(clientKey: string): string {
  return `http-${createHash('sha256').update(clientKey, 'utf8').digest('hex')}`;
}

/** Canonical JSON (object keys sorted) of a validated body, hashed. Bodies are depth-bounded. */
export function bodySha256(body: unknown): string {
  return createHash('sha256')
    .update(body === undefined ? '' : canonicalJson(body), 'utf8')
    .digest('hex');
}

function invalid(message: string): LatticeError {
  return new LatticeError('INVALID_ARGUMENT', message, { field: FIELD });
}

export class IdempotentRequests {
  constructor(
    private readonly db: SqlQueryable,
    private readonly leaseMs = DEFAULT_IDEMPOTENCY_LEASE_MS,
  ) {}

  /** Reserves the key for this request, or says what to replay; 409 as the module comment says. */
  async claim(request: IdempotentRequest): Promise<Claim> {
    // The row can vanish between the insert and the read (its 5xx released it): try again then.
    for (let attempt = 0; attempt < 3; attempt++) {
      const inserted = await this.db.query(
        `INSERT INTO vss_admin_requests (idempotency_key, method, path, body_sha256, status_code, response)
         VALUES ($1, $2, $3, $4, 0, '{}'::jsonb)
         ON CONFLICT (idempotency_key) DO NOTHING
         RETURNING 1`,
        [request.key, request.method, request.path, request.bodySha256],
      );
      if (inserted.rowCount === 1) return { kind: 'run' };
      const { rows } = await this.db.query<StoredRequest>(
        `SELECT method, path, body_sha256, status_code, response FROM vss_admin_requests
          WHERE idempotency_key = $1`,
        [request.key],
      );
      const stored = rows[0];
      if (stored === undefined) continue;
      if (stored.method !== request.method || stored.path !== request.path) {
        throw new LatticeError(
          'ALREADY_EXISTS',
          `${FIELD} was already used for ${stored.method} ${stored.path}: use a new key for another request`,
          { field: FIELD },
        );
      }
      if (stored.body_sha256 !== request.bodySha256) {
        throw new LatticeError(
          'ALREADY_EXISTS',
          `${FIELD} was already used with another body: use a new key for another request`,
          { field: FIELD },
        );
      }
      if (stored.status_code !== 0) {
        return { kind: 'replay', status: stored.status_code, response: stored.response };
      }
      if (await this.takeOver(request.key)) return { kind: 'run' };
      throw new LatticeError(
        'ABORTED',
        `a request with this ${FIELD} is still in progress: retry it later for its answer`,
        { field: FIELD },
      );
    }
    throw new LatticeError('ABORTED', `the request with this ${FIELD} kept changing: retry it`, {
      field: FIELD,
    });
  }

  /** Keeps the answer of a reserved request for replay. */
  async record(key: string, status: number, responseJson: string): Promise<void> {
    await this.db.query(
      `UPDATE vss_admin_requests SET status_code = $2, response = $3::jsonb
        WHERE idempotency_key = $1 AND status_code = 0`,
      [key, status, responseJson],
    );
  }

  /** Drops a reservation that got no answer worth keeping (a 5xx). */
  async release(key: string): Promise<void> {
    await this.db.query('DELETE FROM vss_admin_requests WHERE idempotency_key = $1 AND status_code = 0', [
      key,
    ]);
  }

  /** A reservation older than the lease belonged to a request that died: take it over. */
  private async takeOver(key: string): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `UPDATE vss_admin_requests SET created_at = now()
        WHERE idempotency_key = $1 AND status_code = 0
          AND created_at < now() - $2::integer * interval '1 millisecond'`,
      [key, this.leaseMs],
    );
    return rowCount === 1;
  }
}
