/**
 * Who is calling an ops server's JSON API (`/api/…`: the console's APIs and the HTTP/JSON form of
 * the gRPC services). One key identifies a named caller:
 *
 * - a caller token of `auth.callerTokens` (caller id → token), named by its caller id, sent as
 *   `Authorization: Bearer <token>` or as the gRPC servers' header pair (`caller-id` + `caller-token`,
 *   names from the settings), so a curl user and a browser use what gRPC clients already hold;
 * - a vss admin API key of `vss.admin.apiKeys` (unnamed in the settings), named `vss-admin-key-<n>`
 *   after its place in the list, so the vss admin API's keys open the console beside it.
 *
 * With no key of either kind configured, auth is off and every caller is `anonymous`. Digests of
 * equal length are compared in constant time against every key, as the admin API does.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { LatticeError } from '../errors.js';

export interface ApiAuthOptions {
  /** Caller id → token (`auth.callerTokens`). */
  callerTokens?: Readonly<Record<string, string>>;
  /** The header pair the gRPC servers read (`auth.callerIdHeader`, `auth.callerTokenHeader`). */
  idHeader?: string;
  tokenHeader?: string;
  /** `vss.admin.apiKeys`, when this process runs the vss admin API. */
  adminApiKeys?: readonly string[];
}

/** The authenticated caller of one request. */
export interface ApiCaller {
  /** The caller id (a caller token's), `vss-admin-key-<n>`, or `anonymous` with auth off. */
  name: string;
  /** How it authenticated. */
  kind: 'caller-token' | 'admin-key' | 'anonymous';
  /** The caller token, for forwarding to a gRPC server as the caller's own credentials. */
  token?: string;
  /** The vss admin API key it presented, for forwarding to the admin API. */
  adminKey?: string;
}

/** The challenge sent with every 401 from `/api/` (RFC 6750). */
export const API_WWW_AUTHENTICATE = 'Bearer realm="lattice"';

/** The prefix of the JSON APIs the auth guards; the console's files, probes and /metrics stay open. */
export const API_PREFIX = '/api/';

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

interface KnownKey {
  digest: Buffer;
  caller: ApiCaller;
}

export class ApiAuth {
  private readonly keys: readonly KnownKey[];
  private readonly idHeader: string;
  private readonly tokenHeader: string;

  constructor(options: ApiAuthOptions) {
    const keys: KnownKey[] = [];
    for (const [name, token] of Object.entries(options.callerTokens ?? {})) {
      keys.push({ digest: digest(token), caller: { name, kind: 'caller-token', token } });
    }
    (options.adminApiKeys ?? []).forEach((key, i) => {
      keys.push({
        digest: digest(key),
        caller: { name: `vss-admin-key-${i + 1}`, kind: 'admin-key', adminKey: key },
      });
    });
    this.keys = keys;
    this.idHeader = (options.idHeader ?? 'caller-id').toLowerCase();
    this.tokenHeader = (options.tokenHeader ?? 'caller-token').toLowerCase();
  }

  /** Whether any key is configured (auth on). */
  get enabled(): boolean {
    return this.keys.length > 0;
  }

  /**
   * The caller these headers name; UNAUTHENTICATED (field `Authorization`) when auth is on and no
   * configured key matches. A caller-id header, when sent, must match the token's caller id.
   */
  authenticate(headers: Readonly<Record<string, string | string[] | undefined>>): ApiCaller {
    if (!this.enabled) return { name: 'anonymous', kind: 'anonymous' };
    const presented = this.presentedKey(headers);
    const presentedDigest = digest(presented);
    let found: ApiCaller | undefined;
    for (const key of this.keys) {
      // Every key is compared, so the time does not say which one matched.
      if (timingSafeEqual(presentedDigest, key.digest) && found === undefined) found = key.caller;
    }
    if (found === undefined) throw unauthenticated('the API key is not valid');
    const claimedId = single(headers[this.idHeader]);
    if (claimedId !== undefined && found.kind === 'caller-token' && claimedId !== found.name) {
      throw unauthenticated(`the ${this.tokenHeader} does not belong to ${this.idHeader} ${claimedId}`);
    }
    return found;
  }

  private presentedKey(headers: Readonly<Record<string, string | string[] | undefined>>): string {
    const authorization = single(headers.authorization);
    if (authorization !== undefined && authorization !== '') {
      const match = /^Bearer[ ]+(\S+)\s*$/i.exec(authorization);
      if (match === null) throw unauthenticated('Authorization must be "Bearer <key>"');
      return match[1]!;
    }
    const token = single(headers[this.tokenHeader]);
    if (token !== undefined && token !== '') return token;
    throw unauthenticated(
      `an API key is required: send Authorization: Bearer <key> (or the ${this.idHeader} and ${this.tokenHeader} headers)`,
    );
  }
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function unauthenticated(message: string): LatticeError {
  return new LatticeError('UNAUTHENTICATED', message, { field: 'Authorization' });
}

const CALLER = Symbol('lattice.apiCaller');

/**
 * Guards every route under `/api/` of `app`: the caller is authenticated before the route runs (a
 * 401 with the challenge otherwise) and kept on the request for `apiCallerOf`.
 */
export function guardApiRoutes(app: FastifyInstance, auth: ApiAuth): void {
  app.addHook('onRequest', async (request, reply) => {
    if (!request.url.startsWith(API_PREFIX)) return;
    try {
      (request as unknown as Record<symbol, ApiCaller>)[CALLER] = auth.authenticate(request.headers);
    } catch (err) {
      reply.header('www-authenticate', API_WWW_AUTHENTICATE);
      throw err;
    }
  });
}

/** The caller `guardApiRoutes` authenticated; `anonymous` on a server without the guard. */
export function apiCallerOf(request: FastifyRequest): ApiCaller {
  return (
    (request as unknown as Record<symbol, ApiCaller | undefined>)[CALLER] ?? {
      name: 'anonymous',
      kind: 'anonymous',
    }
  );
}
