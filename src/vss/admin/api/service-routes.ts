/**
 * The service's own routes: /healthz (the process answers), /readyz (SQL answers `SELECT 1`, plus
 * any checks the composition root adds, each bounded in time), /metrics (Prometheus text of the
 * Metrics port) and the OpenAPI document at /docs (JSON) and /docs/openapi.yaml.
 */
import type { FastifyInstance } from 'fastify';
import { type ReadinessCheck, readinessWithin } from '../../../platform/http/index.js';
import type { Metrics } from '../../../platform/metrics/index.js';
import type { SqlQueryable } from '../../../platform/sql/index.js';
import { ref } from './response-schemas.js';

export interface ServiceRouteOptions {
  service: string;
  sql: SqlQueryable;
  metrics: Metrics;
  readiness: Readonly<Record<string, ReadinessCheck>>;
  readinessTimeoutMs: number;
}

const open = { security: [] };

export function serviceRoutes(app: FastifyInstance, options: ServiceRouteOptions): void {
  const checks: Record<string, ReadinessCheck> = {
    sql: async () => {
      await options.sql.query('SELECT 1');
    },
    ...options.readiness,
  };

  app.get(
    '/healthz',
    {
      schema: {
        summary: 'Liveness: the process answers',
        tags: ['service'],
        ...open,
        response: { 200: ref('Health') },
      },
    },
    async () => ({ status: 'ok', service: options.service }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        summary: 'Readiness: SQL (and the other dependencies) answer',
        tags: ['service'],
        ...open,
        response: { 200: ref('Readiness'), 503: ref('Readiness') },
      },
    },
    async (_request, reply) => {
      const results = await Promise.all(
        Object.entries(checks).map(async ([name, check]) => {
          try {
            await readinessWithin(name, options.readinessTimeoutMs, check);
            return [name, 'ok'] as const;
          } catch (err) {
            return [name, err instanceof Error ? err.message : String(err)] as const;
          }
        }),
      );
      const ready = results.every(([, result]) => result === 'ok');
      return reply
        .status(ready ? 200 : 503)
        .send({ status: ready ? 'ready' : 'not ready', checks: Object.fromEntries(results) });
    },
  );

  app.get(
    '/metrics',
    {
      schema: {
        summary: 'Prometheus metrics (text exposition format)',
        description: 'Open without an API key, like the other services’ ops endpoints.',
        tags: ['service'],
        ...open,
        response: {
          200: { description: 'Prometheus text', content: { 'text/plain': { schema: { type: 'string' } } } },
        },
      },
    },
    async (_request, reply) => {
      const { contentType, body } = await options.metrics.scrape();
      return reply.type(contentType).send(body);
    },
  );

  app.get('/docs', { schema: { hide: true } }, async () => app.swagger());
  app.get('/docs/openapi.yaml', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('application/yaml').send(app.swagger({ yaml: true })),
  );
}
