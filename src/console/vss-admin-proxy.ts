/**
 * `GET|POST /api/v1/vss-admin/*` on the ops server: the console's vss pages reach the vss admin API through
 * it, so the browser talks to one origin with one key. The call goes to the admin API's same path with
 * the admin API key of the caller when it signed in with one, else the first configured key (the
 * caller authenticated with a caller token, which the ops server's guard already checked).
 */
import type { FastifyInstance } from 'fastify';
import { apiCallerOf } from '../platform/http/api-auth.js';
import { type ClientTls, fetchWithTls } from '../platform/http/index.js';

export const VSS_ADMIN_PREFIX = '/api/v1/vss-admin';

/** Headers of the console's request that the admin API reads, forwarded as they are. */
const FORWARDED = ['content-type', 'idempotency-key', 'accept'];

export interface VssAdminProxyOptions {
  /** `vss.admin.apiKeys`: the first goes with calls of callers that signed in with a caller token. */
  apiKeys: readonly string[];
  tls?: ClientTls | undefined;
}

/**
 * Registers the route now (routes cannot be added once the server listens); it answers 503 until
 * `serve(url)` names the admin API, which starts after the ops server in `lattice up`.
 */
export function registerVssAdminProxy(
  app: FastifyInstance,
  options: VssAdminProxyOptions,
): { serve(url: string): void } {
  let target: string | undefined;
  const fetcher = fetchWithTls(options.tls);
  // GET and POST: the methods the admin API has.
  app.route({
    method: ['GET', 'POST'],
    url: `${VSS_ADMIN_PREFIX}/*`,
    schema: {
      summary: 'The vss admin API (its own OpenAPI document is at its /docs), forwarded with the admin key',
      tags: ['vss admin'],
    },
    handler: async (request, reply) => {
      if (target === undefined) {
        return reply
          .status(503)
          .send({ error: { code: 'UNAVAILABLE', message: 'the vss admin API has not started yet' } });
      }
      const caller = apiCallerOf(request);
      const key = caller.adminKey ?? options.apiKeys[0];
      const headers: Record<string, string> = {};
      for (const name of FORWARDED) {
        const value = request.headers[name];
        if (typeof value === 'string') headers[name] = value;
      }
      if (key !== undefined) headers.authorization = `Bearer ${key}`;
      const hasBody = request.body !== undefined && request.method !== 'GET' && request.method !== 'HEAD';
      let answer: Response;
      try {
        answer = await fetcher(`${target}${request.url.slice(VSS_ADMIN_PREFIX.length)}`, {
          method: request.method,
          headers,
          ...(hasBody ? { body: JSON.stringify(request.body) } : {}),
        });
      } catch (err) {
        const cause = (err as { cause?: { message?: string } }).cause?.message ?? (err as Error).message;
        return reply
          .status(502)
          .send({ error: { code: 'UNAVAILABLE', message: `the vss admin API did not answer: ${cause}` } });
      }
      const type = answer.headers.get('content-type');
      if (type !== null) reply.type(type);
      return reply.status(answer.status).send(await answer.text());
    },
  });
  return {
    serve(url) {
      target = url.replace(/\/$/, '');
    },
  };
}
