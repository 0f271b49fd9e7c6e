/**
 * Page tokens: base64url JSON plus an HMAC-SHA256 over it, so a client can carry them but not forge
 * or edit them. A token pins the query (a hash), the filters (a hash), the read version, how many
 * candidates were returned before, and the last candidate returned (score and id): the next page
 * starts right after that candidate in the query's candidate window (candidate-window.ts), so pages
 * of one query neither overlap nor skip.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { invalidArgument } from '../../platform/errors.js';

export interface PageCursor {
  /** Hash of the query (candidate id or vector). */
  query: string;
  /** Hash of the effective filters (request + query). */
  filters: string;
  readVersion: number;
  /** Candidates returned by the previous pages. */
  offset: number;
  /** Score and id of the last candidate returned. */
  lastScore: number;
  lastId: string;
}

interface TokenBody {
  v: 1;
  q: string;
  f: string;
  rv: number;
  o: number;
  s: number;
  i: string;
}

export class PageTokens {
  private readonly secret: Buffer;

  /** Replicas that serve one client must share `secret`; without one a random per-process key is used. */
  constructor(secret?: string) {
    this.secret = secret ? Buffer.from(secret, 'utf8') : randomBytes(32);
  }

  encode(cursor: PageCursor): string {
    const body: TokenBody = {
      v: 1,
      q: cursor.query,
      f: cursor.filters,
      rv: cursor.readVersion,
      o: cursor.offset,
      s: cursor.lastScore,
      i: cursor.lastId,
    };
    const payload = Buffer.from(JSON.stringify(body), 'utf8').toString('base64url');
    return `${payload}.${this.sign(payload)}`;
  }

  /** The cursor of a token; INVALID_ARGUMENT "bad page_token" (naming `field`) when it was not ours. */
  decode(token: string, field: string): PageCursor {
    const bad = () => invalidArgument(`${field}: bad page_token`, field);
    const dot = token.indexOf('.');
    if (dot <= 0) throw bad();
    const payload = token.slice(0, dot);
    const signature = Buffer.from(token.slice(dot + 1), 'base64url');
    const expected = Buffer.from(this.sign(payload), 'base64url');
    if (signature.length !== expected.length || !timingSafeEqual(signature, expected)) throw bad();
    let body: unknown;
    try {
      body = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      throw bad();
    }
    if (!isTokenBody(body)) throw bad();
    return {
      query: body.q,
      filters: body.f,
      readVersion: body.rv,
      offset: body.o,
      lastScore: body.s,
      lastId: body.i,
    };
  }

  private sign(payload: string): string {
    return createHmac('sha256', this.secret).update(payload).digest('base64url');
  }
}

function isTokenBody(value: unknown): value is TokenBody {
  if (typeof value !== 'object' || value === null) return false;
  const b = value as Record<string, unknown>;
  return (
    b.v === 1 &&
    typeof b.q === 'string' &&
    typeof b.f === 'string' &&
    Number.isInteger(b.rv) &&
    Number.isInteger(b.o) &&
    (b.o as number) >= 0 &&
    typeof b.s === 'number' &&
    typeof b.i === 'string'
  );
}

/** A short stable hash (hex SHA-256) of text or bytes. */
export function digest(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}
